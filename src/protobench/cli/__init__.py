"""The ``protobench`` command: a thin Typer layer over pure functions.

Each command parses its arguments, calls a function that returns data and an
exit code, and prints: results on stdout, diagnostics on stderr.
:data:`~protobench.cli.table.COMMANDS` is the one list of commands: each is
imported when it is used, and a command module imports the engine, pydantic,
numpy or a protocol library only inside its function, so ``--help``,
``--version`` and every command's ``--help`` import none of them
(``tests/cli/test_start.py``). ``protobench``, ``protobench --help`` and
``-h`` print the root's help without importing Typer (:mod:`.roothelp`); the
Typer app is in :mod:`.root` (``from protobench.cli import app`` loads it).
Exit codes: 0 ok, 1 thresholds failed (or a diff gate), 2 bad input, 3 the run
could not complete, 4 a diff gate could not decide, 5 the snapshot was not
saved in the store; :mod:`protobench.cli.boundary` maps every error of every
command to one of them, with one line on stderr.
"""

from __future__ import annotations

import os
import sys

from protobench.cli.table import COMMANDS

__all__ = ["COMMANDS", "app", "main"]

_ROOT_HELP_ARGS: tuple[list[str], ...] = ([], ["--help"], ["-h"])
"""The command lines that print the root's help."""
_COMPLETE = "_PROTOBENCH_COMPLETE"
"""Set when the shell asks for completions (the command line is then empty): Typer answers."""


def main() -> int:
    """The console script (and ``python -m protobench``): the command line's exit code."""
    if sys.argv[1:] in _ROOT_HELP_ARGS and _COMPLETE not in os.environ:
        from protobench.cli.roothelp import render  # noqa: PLC0415

        sys.stdout.write(render())
        return 0
    from protobench.cli.root import run_app  # noqa: PLC0415 - Typer, for every other line

    return run_app()


def __getattr__(name: str) -> object:
    """``app``: the Typer app, imported when it is asked for."""
    if name == "app":
        from protobench.cli.root import app  # noqa: PLC0415

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
