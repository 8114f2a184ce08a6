"""The profile format: the pydantic models that validate a profile TOML file.

Protocol-specific keys (the ``[options]`` table and the parameters of each
``[[group]]``) are validated afterwards against the plugin's own models, so
the same checks apply to built-in and third-party protocols. Every value is
bounded here (finite, in range, of the right type), so a profile that loads
is one a worker can run.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from dataclasses import Field as Field_
from types import NoneType, UnionType
from typing import Annotated, Any, get_args, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    create_model,
    field_validator,
)

from protobench.profiles.settings import BY_NAME, MAX_SESSIONS, RunSettings, positive
from protobench.vocab.fields import Duration

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A profile name: it becomes part of file names, so no path separator, no leading dot."""


def check_name(value: str) -> str:
    """``value`` when it is a safe profile name, else ``ValueError`` saying what is allowed."""
    if not NAME.match(value) or ".." in value:
        raise ValueError(
            f"expected a name of letters, digits, '.', '_' and '-' (at most 64, not starting "
            f"with '.' or '-', no '..'), got {value[:70]!r}"
        )
    return value


_period = positive("a period")


class GroupSpec(BaseModel):
    """One ``[[group]]``: an operation, how many sessions run it, how it is paced.

    Keys other than the common ones are the operation's parameters; they are
    kept in ``params`` and validated by the protocol plugin.
    """

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="The operation's name in the figures (default: op); unique in a profile.",
    )
    op: str = Field(description="The protocol's operation this group runs.")
    count: int = Field(
        default=1, ge=1, le=MAX_SESSIONS, description="Sessions that run it (connections rescales)."
    )
    every: Duration | None = Field(
        default=None,
        description="One exchange per period per session, e.g. 2s (default: back-to-back).",
    )
    share: float | None = Field(
        default=None,
        gt=0,
        le=1e9,
        description="Its share of the open model's rate (default: its count).",
    )

    @field_validator("every")
    @classmethod
    def _every_positive(cls, value: float | None) -> float | None:
        return None if value is None else _period(value)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ProfileKeys(BaseModel):
    """The keys of a profile that are its own: name, protocol, description, groups.

    :data:`Profile`, the model of a whole file, adds the run settings to them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(
        description="The profile's name: letters, digits, '.', '_', '-' (at most 64)."
    )
    protocol: str = Field(description="The protocol plugin: http, websocket, mqtt, bacnet-ip...")
    description: str = Field(default="", description="One line saying what the profile does.")
    group: list[GroupSpec] = Field(
        min_length=1, description="The operations: one [[group]] table each."
    )

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return check_name(value)

    def settings(self) -> RunSettings:
        """The run settings this profile gives (the defaults for those it leaves out)."""
        return RunSettings(**{f.name: getattr(self, f.name) for f in fields(RunSettings)})


def _field(setting: Field_[Any], annotation: Any) -> tuple[Any, Any]:
    """A run setting as a pydantic field: its type, parser and check, its default and bounds."""
    spec = BY_NAME[setting.name]
    steps: list[Any] = [BeforeValidator(spec.kind.coerce)] if spec.kind.coerce else []
    if spec.check is not None:
        steps.append(AfterValidator(spec.check))
    if steps:  # on the value itself, never on a None
        args = get_args(annotation)
        if isinstance(annotation, UnionType) and NoneType in args:
            (value_type,) = (arg for arg in args if arg is not NoneType)
            annotation = Annotated[(value_type, *steps)] | None
        else:
            annotation = Annotated[(annotation, *steps)]
    about = spec.help or None
    if setting.default_factory is not MISSING:
        factory = setting.default_factory
        return annotation, Field(default_factory=factory, ge=spec.ge, le=spec.le, description=about)
    return annotation, Field(default=setting.default, ge=spec.ge, le=spec.le, description=about)


_HINTS = get_type_hints(RunSettings)
_SETTINGS: dict[str, Any] = {f.name: _field(f, _HINTS[f.name]) for f in fields(RunSettings)}
Profile = create_model(
    "Profile",
    __base__=ProfileKeys,
    __module__=__name__,
    __doc__="A whole profile file.",
    **_SETTINGS,
)
"""A whole profile file: its own keys (:class:`ProfileKeys`), then the run settings."""
