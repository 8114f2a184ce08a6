"""The profile format: the pydantic models that validate a profile TOML file.

Protocol-specific keys (the ``[options]`` table and the parameters of each
``[[group]]``) are validated afterwards against the plugin's own models, so
the same checks apply to built-in and third-party protocols. Every value is
bounded here (finite, in range, of the right type), so a profile that loads
is one a worker can run.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from protobench.vocab.fields import Duration, Rate
from protobench.vocab.thresholds import parse_threshold

MAX_SESSIONS = 1_000_000
"""The most sessions of one group, and the most ``connections``."""
MAX_PROCESSES = 256
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


def _positive(value: float, what: str) -> float:
    if value <= 0:
        raise ValueError(f"expected {what} > 0")
    return value


class GroupSpec(BaseModel):
    """One ``[[group]]``: an operation, how many sessions run it, how it is paced.

    Keys other than the common ones are the operation's parameters; they are
    kept in ``params`` and validated by the protocol plugin.
    """

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    name: str | None = Field(default=None, min_length=1, max_length=100)
    op: str
    count: int = Field(default=1, ge=1, le=MAX_SESSIONS)
    every: Duration | None = None
    share: float | None = Field(default=None, gt=0, le=1e9)

    @field_validator("every")
    @classmethod
    def _every_positive(cls, value: float | None) -> float | None:
        return None if value is None else _positive(value, "a period")

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Profile(BaseModel):
    """A whole profile file."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str
    protocol: str
    description: str = ""
    target: str = "embedded"
    warmup: Duration = 2.0
    duration: Duration = 10.0
    interval: Duration = Field(default=1.0)
    processes: int | None = Field(default=None, ge=1, le=MAX_PROCESSES)
    connections: int | None = Field(default=None, ge=1, le=MAX_SESSIONS)
    rate: Rate | None = None
    ramp_to: Rate | None = None
    pacing_precision: Duration = Field(default=0.0001, le=0.1)
    """Open model: arrivals closer together than this leave in batches, each up to this late."""
    clock: Literal["kernel", "user"] = "kernel"
    """Where exchange times come from: the kernel's socket timestamps (where the platform and
    the protocol give them) or user space (the engine's own reads of the clock)."""
    timeout: Duration = 5.0
    drain: Duration = 2.0
    thresholds: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    serve: dict[str, Any] = Field(default_factory=dict)
    group: list[GroupSpec] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("interval")
    @classmethod
    def _interval_range(cls, value: float) -> float:
        if not 0.05 <= value <= 60:
            raise ValueError("expected an interval between 50ms and 60s")
        return value

    @field_validator("duration")
    @classmethod
    def _duration_positive(cls, value: float) -> float:
        return _positive(value, "a duration")

    @field_validator("timeout")
    @classmethod
    def _timeout_positive(cls, value: float) -> float:
        return _positive(value, "a timeout")

    @field_validator("thresholds")
    @classmethod
    def _thresholds_parse(cls, value: list[str]) -> list[str]:
        for expr in value:
            parse_threshold(expr)
        return value
