"""``protobench --help`` without Typer is exactly Typer's help (issue 29: the start time).

The root's help is printed from the table by :mod:`protobench.cli.roothelp`, so
``protobench``, ``--help`` and ``-h`` import no Typer; the text must stay the one
Typer would print, at every width.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from protobench.cli.roothelp import render
from tests.cli.test_start import imported

_TYPER_HELP = (
    "import sys; sys.argv = ['protobench', '--help']\n"
    "from protobench.cli.root import run_app; run_app()"
)
"""The root's help through Typer."""


def printed(code: list[str], columns: int) -> str:
    """What ``python ARGS`` prints in a terminal ``columns`` wide."""
    done = subprocess.run(
        [sys.executable, *code],
        env={**os.environ, "COLUMNS": str(columns)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("columns", [40, 60, 79, 80, 81, 100, 200])
def test_the_root_help_is_what_typer_prints(columns: int) -> None:
    fast = printed(["-m", "protobench", "--help"], columns)
    assert fast == render(columns)
    assert fast == printed(["-c", _TYPER_HELP], columns)


@pytest.mark.parametrize("args", [[], ["--help"], ["-h"]])
def test_the_root_help_imports_no_typer(args: list[str]) -> None:
    code, modules = imported(args)
    assert code == 0
    assert not {m for m in modules if m.partition(".")[0] in ("typer", "click")}


def test_a_command_still_goes_through_typer() -> None:
    code, modules = imported(["schema", "--help"])
    assert code == 0
    assert "typer" in modules
