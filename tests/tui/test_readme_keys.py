"""The monitor page's key table and the help screen name every key the monitor binds (issue 19)."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from protobench.tui.app import MonitorApp
from protobench.tui.screens.help import KEYS

MONITOR_PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "monitor.md"
GLYPHS = {
    "plus": "+",
    "equals_sign": "=",
    "minus": "-",
    "left": "←",
    "right": "→",
    "up": "↑",
    "down": "↓",
    "slash": "/",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "question_mark": "?",
}


def bound_keys() -> set[str]:
    """Every key of the monitor's bindings, as the docs write it."""
    keys: set[str] = set()
    for binding in MonitorApp.BINDINGS:
        assert isinstance(binding, Binding)
        keys.update(GLYPHS.get(key, key) for key in binding.key.split(","))
    return keys


def key_table() -> str:
    """The rows of the monitor page's key table."""
    section = MONITOR_PAGE.read_text().split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("| `"))


def test_the_docs_key_table_names_every_bound_key() -> None:
    named: set[str] = set()
    for row in key_table().splitlines():
        first_cell = row.split("|")[1]
        named.update(re.findall(r"`([^`]+)`", first_cell))
    assert bound_keys() - named == set()
    assert named - bound_keys() <= {"ctrl+q"}  # Textual's own quit key


def test_the_help_screen_names_every_bound_key() -> None:
    shown = set(re.findall(r"\[b\](.+?)\[/b\]", KEYS.replace("\\[", "[")))
    named = {key for cell in shown for key in cell.split()}
    assert bound_keys() - {"=", "ctrl+q"} - named == set()


def test_the_docs_name_the_baseline_flag_of_run_and_replay() -> None:
    section = MONITOR_PAGE.read_text()
    assert "protobench run PROFILE --baseline REF" in section
    assert "protobench replay [SNAPSHOT]" in section
    assert "[--baseline REF]" in section
