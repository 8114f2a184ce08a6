"""Loading profiles: built-in or from a file, validated with located errors.

Every problem becomes a :class:`ProfileError` that names the file, the line
when it can be found, the key, and what was expected; the CLI prints it and
exits with code 2.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from protobench.profiles import builtin
from protobench.profiles.model import Profile, ProfileKeys
from protobench.protocols import registry
from protobench.protocols.base import BEFORE_OVERRIDES, ProtocolPlugin
from protobench.vocab.exceptions import BadInput

BUILTIN_PACKAGE = "protobench.profiles.builtin"
PLUGIN_BUG = "a bug in the plugin's validation"
"""Said when a plugin's model raises something other than a validation error."""

Loc = tuple[str | int, ...]


class ProfileError(BadInput):
    """A profile that cannot be used, located as precisely as possible."""

    def __init__(self, source: str, key: str, message: str, line: int | None = None) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")
        self.source = source
        self.key = key
        self.message = message
        self.line = line


@dataclass(frozen=True)
class LoadedProfile:
    """A validated profile with where it came from and the hash of its text."""

    profile: ProfileKeys
    source: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def builtin_names() -> list[str]:
    """Names of the built-in profiles."""
    return builtin.names()


def builtin_text(name: str) -> str:
    return (resources.files(BUILTIN_PACKAGE) / f"{name}.toml").read_text(encoding="utf-8")


def load(name_or_path: str) -> LoadedProfile:
    """Load a built-in profile by name, or a profile file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ProfileError(str(path), "", f"cannot read the file: {exc.strerror}") from exc
        return parse(text, str(path))
    if name_or_path in builtin_names():
        return parse(builtin_text(name_or_path), f"<builtin>/{name_or_path}.toml")
    known = ", ".join(builtin_names())
    raise ProfileError(
        name_or_path, "", f"no such profile file, and not a built-in profile (built-ins: {known})"
    )


def parse(text: str, source: str) -> LoadedProfile:
    """Validate profile text; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column \d+\)$", str(exc))
        message = str(exc)[: where.start()].strip() if where else str(exc)
        line = int(where.group(1)) if where else None
        raise ProfileError(source, "", f"invalid TOML: {message}", line) from exc
    return from_data(data, source, text)


def from_data(data: dict[str, Any], source: str, text: str) -> LoadedProfile:
    """Validate a profile's data; ``text`` is its TOML (its hash is the profile's, its lines
    locate errors); ``source`` names it in errors."""
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        raise located_error(exc, text, source) from None
    try:
        plugin = registry.load(profile.protocol)
    except registry.PluginError as exc:
        raise ProfileError(source, "protocol", str(exc), _line_of(text, ("protocol",))) from None
    check_protocol_keys(profile, plugin, text, source, final=False)
    return LoadedProfile(profile, source, text)


def check_protocol_keys(
    profile: ProfileKeys, plugin: ProtocolPlugin, text: str, source: str, *, final: bool = True
) -> None:
    """Validate ``[options]`` and every group's parameters against the plugin.

    ``final`` is false for a profile's own tables before the run's overrides:
    the checks that judge the options together wait (see
    :func:`~protobench.protocols.base.overrides_applied`).
    """
    context = None if final else {BEFORE_OVERRIDES: True}
    _validate(plugin.options, profile.settings().options, text, source, ("options",), context)
    names: set[str] = set()
    for index, group in enumerate(profile.group):
        params_model = plugin.operations.get(group.op)
        if params_model is None:
            known = ", ".join(sorted(plugin.operations))
            raise ProfileError(
                source,
                f"group[{index}].op",
                f"unknown operation {group.op!r} for protocol {plugin.name!r} "
                f"(expected one of {known})",
                _line_of(text, ("group", index, "op")),
            )
        _validate(params_model, group.params, text, source, ("group", index))
        name = group.name or group.op
        if name in names:
            raise ProfileError(
                source,
                f"group[{index}].name",
                f"duplicate group name {name!r}: give each group a unique 'name'",
                _line_of(text, ("group", index, "name")),
            )
        names.add(name)


def _validate(
    model: type[BaseModel],
    values: dict[str, Any],
    text: str,
    source: str,
    prefix: Loc,
    context: dict[str, Any] | None = None,
) -> None:
    """Validate a plugin's table; a plugin check that raises instead of failing is located too."""
    try:
        model.model_validate(values, context=context)
    except ValidationError as exc:
        raise located_error(exc, text, source, prefix) from None
    except (TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        raise ProfileError(
            source,
            _key_name(prefix),
            f"a value the plugin cannot check ({type(exc).__name__}: {exc}; {PLUGIN_BUG})",
            _line_of(text, prefix),
        ) from None


def located_error(exc: ValidationError, text: str, source: str, prefix: Loc = ()) -> ProfileError:
    """The first error of ``exc`` as a :class:`ProfileError` naming its key and line."""
    error = exc.errors()[0]
    loc = prefix + tuple(error["loc"])
    return ProfileError(source, _key_name(loc), _message(error), _line_of(text, loc))


def flag_error(exc: ValidationError, flag: str, skip: int = 0) -> ProfileError:
    """The first error of ``exc`` about a value given by ``flag``.

    ``skip`` leading parts of the error's key path are the flag's own key
    (``--duration`` is ``duration``) and are not repeated.
    """
    error = exc.errors()[0]
    return ProfileError(flag, _key_name(tuple(error["loc"])[skip:]), _message(error))


def _message(error: ErrorDetails) -> str:
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    elif error["type"] == "missing":
        message = "required key is missing"
    elif "input" in error and error["type"] != "value_error":
        message = f"{message} (got {_short(error['input'])})"
    return message.removeprefix("Value error, ")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _key_name(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] = f"{parts[-1]}[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line number of a key path in TOML text (1-based)."""
    lines = text.splitlines()
    start = 0
    if loc and loc[0] == "group" and len(loc) > 1 and isinstance(loc[1], int):
        seen = -1
        for number, line in enumerate(lines):
            if line.strip() == "[[group]]":
                seen += 1
                if seen == loc[1]:
                    start = number
                    break
        loc = loc[2:]
    elif loc and loc[0] in ("options", "serve"):
        for number, line in enumerate(lines):
            if line.strip() == f"[{loc[0]}]":
                start = number
                break
        loc = loc[1:]
    keys = [item for item in loc if isinstance(item, str)]
    if not keys:
        return start + 1 if start else None
    for number in range(start, len(lines)):
        stripped = lines[number].strip()
        if stripped.startswith(keys[0]) and stripped[len(keys[0]) :].lstrip().startswith("="):
            return number + 1
    return None
