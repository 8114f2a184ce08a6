"""``--help`` reads as a person writes it: placeholders, not Python types (issue 29).

Typer prints ``--target <str>``, ``--threshold <list[str]>`` and ``{profile}``
by itself; every option and argument of every command shows a placeholder
instead (``URL``, ``DURATION``, ``RATE``, ``EXPR``, ``PROFILE``), and
``serve NAME --help`` lists that target's own options.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from protobench.cli import COMMANDS, app
from protobench.profiles.settings import FLAGGED

PLACEHOLDER = re.compile(
    r"^[A-Z][A-Z0-9_=|.:]*(\.\.\.)?$|^\[[A-Z][A-Z0-9_]*\]$|^[a-z0-9|]+\|[a-z0-9|]+$"
)
"""``URL``, ``KEY=VALUE``, ``HOST:PORT``, ``REF...``, ``[REF]``, ``URL|PROTOCOL``, or choices
``json|zinc``."""


PYTHON_TYPE = re.compile(r"<(str|int|float|bool|path|list\[\w+\]|(int|float) range)>")
"""What Typer prints where a placeholder goes."""


def help_of(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def paths() -> list[list[str]]:
    """Every command and every command of a group."""
    found: list[list[str]] = []
    for name, entry in COMMANDS.items():
        subs = getattr(entry.load(name), "commands", {})
        found.extend([[name, sub] for sub in subs] if subs else [[name]])
    return found


def value_placeholders(text: str) -> list[str]:
    """The placeholder of every option that takes a value, and of every argument."""
    found = []
    section = ""
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue  # a blank line or a wrapped help line
        cells = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        if section.startswith("Arguments"):
            found.append(cells[0])
        elif section.startswith("Options") and cells[0].startswith("-") and " / " not in cells[0]:
            words = cells[0].split()
            if len(words) > 1 and not words[-1].startswith("-"):
                found.append(words[-1])
    return found


@pytest.mark.parametrize("path", paths(), ids=" ".join)
def test_every_value_has_a_placeholder_a_person_reads(path: list[str]) -> None:
    text = help_of(*path)
    assert not PYTHON_TYPE.search(text), text
    usage = text.splitlines()[0]
    assert "{" not in usage, usage
    for placeholder in value_placeholders(text):
        assert PLACEHOLDER.match(placeholder), (path, placeholder)


def test_the_run_flags_show_their_kind() -> None:
    text = help_of("run")
    assert text.startswith("Usage: protobench run [OPTIONS] PROFILE")
    for line in ("-t, --target URL", "-d, -z, --duration DURATION", "-r, --rate RATE"):
        assert line in text
    assert "--threshold EXPR" in text
    assert "-o, --opt KEY=VALUE" in text
    for setting in FLAGGED:
        assert f"{setting.flag} {setting.metavar}" in text, setting.name


def test_serve_name_help_lists_that_targets_options() -> None:
    text = help_of("serve", "http")
    assert "Options of the http target:" in text
    assert re.search(r"--delay DURATION\s+delay of every response\s+\[default: 0s\]", text)
    assert re.search(r"--status N\s+status of every response\s+\[default: 200\]", text)
    ws = help_of("serve", "ws")
    assert re.search(r"--push-rate RATE\s+.*\[default: 10/s\]", ws)
    assert "--tls / --no-tls" in ws
    assert "Options of the http target" not in ws


def test_serve_help_without_a_name_points_to_each_targets_help() -> None:
    text = help_of("serve")
    assert "protobench serve NAME --help" in text
    assert "Options of the" not in text
