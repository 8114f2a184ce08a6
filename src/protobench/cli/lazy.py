"""Commands imported on first use: the root group lists them from a table, not their modules.

The root group (:class:`LazyGroup`) lists the commands of its table
(:data:`protobench.cli.table.COMMANDS`) with their summaries, so it imports no
command module; ``protobench run ...`` (or ``run --help``, or a completion under
``run``) imports ``run``'s module alone (:meth:`protobench.cli.table.Lazy.load`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import typer.core

from protobench.cli.boundary import Boundary


class Entry(Protocol):
    """A command of the table: its summary, and its Click command once loaded."""

    @property
    def summary(self) -> str: ...

    def load(self, name: str) -> Any: ...


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

    table: ClassVar[Mapping[str, Entry]] = {}

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
