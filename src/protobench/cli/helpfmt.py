"""How ``--help`` reads: Click's plain layout with placeholders a person reads.

Typer (0.29) prints a value's Python type where a placeholder goes
(``--target <str>``, ``--threshold <list[str]>``, ``Usage: ... {profile}``).
:func:`readable` gives every loaded command Click's plain help (Typer's rich
help imports rich and costs about 0.2 s more CPU than the rest of ``--help``)
and a placeholder for every value: the one its option or argument declares
(``URL``, ``DURATION``, ``RATE``, ``EXPR``, ``KEY=VALUE``...), else one from its
kind (``N`` for a whole number, ``NUMBER``, ``FILE`` for a path, ``TEXT``).
Arguments are shown by their placeholder alone, as Click does
(``Usage: protobench run [OPTIONS] PROFILE``).
"""

from __future__ import annotations

from typing import Any

import typer
import typer.core

_BY_KIND = {"int": "N", "float": "NUMBER", "path": "FILE", "Path": "FILE"}
"""The placeholder of a value that declares none, by the type Typer reads it as."""


class ReadableArgument(typer.core.TyperArgument):
    """A positional argument shown by its placeholder alone (``PROFILE``, ``[REF]``, ``REF...``)."""

    def display_type_rich(self, ctx: Any) -> str:
        return ""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return name if self.required else f"[{name}]"


def placeholder(param: typer.core.TyperArgument | typer.core.TyperOption) -> str:
    """The placeholder of a parameter that declares none: from its name or its kind."""
    if isinstance(param, typer.core.TyperArgument):
        return (param.name or "value").upper()
    name = getattr(param.type_descriptor.annotation, "__name__", "")
    return "VALUE" if name == "list" else _BY_KIND.get(name, "TEXT")


def readable(command: Any) -> None:
    """Plain help with readable placeholders for ``command`` and every command under it."""
    command.rich_markup_mode = None
    for param in command.params:
        if isinstance(param, typer.core.TyperArgument):
            param.__class__ = ReadableArgument
        elif not isinstance(param, typer.core.TyperOption) or param.is_flag or param.count:
            continue
        if param.metavar is None:
            param.metavar = placeholder(param)
    for sub in getattr(command, "commands", {}).values():
        readable(sub)
