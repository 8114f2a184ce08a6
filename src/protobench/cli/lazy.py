"""Commands imported on first use: the root group lists them from a table, not their modules.

``protobench --help`` reads each command's one-line summary from the table, so
it imports no command module; ``protobench run ...`` (or ``run --help``, or a
completion under ``run``) imports ``run``'s module alone. A command module
either has ``register(app)`` (which adds its one command, a module-level
function) or ``app`` (a group of them).

Help is Click's plain formatting with readable placeholders
(:func:`~protobench.cli.helpfmt.readable`, applied to each loaded command).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.core
import typer.main

from protobench.cli.boundary import Boundary
from protobench.cli.helpfmt import readable


@dataclass(frozen=True)
class Lazy:
    """Where a command lives and its one-line summary (the first line of its help)."""

    module: str
    summary: str

    def load(self, name: str) -> Any:
        """Import the module and build its Click command, named ``name``."""
        module = importlib.import_module(self.module)
        parent = typer.Typer(rich_markup_mode=None, add_completion=False)
        group = getattr(module, "app", None)
        if group is not None:
            parent.add_typer(group, name=name, cls=FlagsOff)
        else:
            module.register(parent)
        command = typer.main.get_group(parent).commands[name]
        readable(command)
        return command


class FlagsOff(typer.core.TyperGroup):
    """A group whose flags default to False rather than None.

    Typer (0.29) coerces a flag whose value is None through a pydantic adapter:
    pydantic would load for every ``protobench [GROUP] COMMAND --help``, as the
    groups above the command parse their own (absent) ``--help``.
    """

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False) and param.default is None:
                param.default = False
        return params


class LazyGroup(FlagsOff, Boundary):
    """The root group: commands from :attr:`table`, each imported when it is used."""

    table: ClassVar[Mapping[str, Lazy]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return list(dict.fromkeys([*self.table, *super().list_commands(ctx)]))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = self.table.get(cmd_name)
        if entry is not None and cmd_name not in self.commands:
            self.commands[cmd_name] = entry.load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list of ``--help`` from the table: no command module is imported."""
        rows = [(name, entry.summary) for name, entry in self.table.items()]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
