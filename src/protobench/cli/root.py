"""The Typer app of ``protobench``: the root group over the table of commands.

The root (:class:`Root`) takes ``--version`` and the completion options and lists
:data:`~protobench.cli.table.COMMANDS`, each loaded on first use.
"""

from __future__ import annotations

from typing import Annotated

import typer

from protobench.cli.lazy import LazyGroup
from protobench.cli.table import COMMANDS, ROOT_HELP, VERSION_HELP
from protobench.termtext import echo


class Root(LazyGroup):
    """The ``protobench`` group: :data:`COMMANDS`, loaded on first use."""

    table = COMMANDS


app = typer.Typer(
    name="protobench",
    cls=Root,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from protobench.cli.version import version_line  # noqa: PLC0415 - only for --version

        echo(version_line())
        raise typer.Exit()


@app.callback(help=ROOT_HELP)
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help=VERSION_HELP),
    ] = False,
) -> None:
    """The root's options (its help is :data:`~protobench.cli.table.ROOT_HELP`)."""


def run_app() -> int:
    """The command line through Typer: its exit code (see :mod:`.boundary`)."""
    code: int = app(prog_name="protobench", standalone_mode=False)
    return code
