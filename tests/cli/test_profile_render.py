"""The target's functions under a run's summary and in diff's table: shown, never obeyed."""

from __future__ import annotations

import dataclasses

from protobench.cli.diff_text import render_text
from protobench.cli.render import summary_table
from protobench.engine.stacks.model import Frame, StackCounter, TargetProfile, summarize
from protobench.snapshots.diff import compare
from tests.support.snapshots import typed_snapshot

EVIL = "handle\x1b]0;pwned\x07\x1b[2J"


def profiled(count: int) -> TargetProfile:
    counter = StackCounter()
    counter.add([Frame(name="main", file="app.py"), Frame(name=EVIL, file="app.py")], count)
    counter.add([Frame(name="main", file="app.py"), Frame(name="parse", file="lib.py")], 10)
    return TargetProfile(tool="py-spy", pid=7, rate=100.0, end_s=4.0, cpu=counter.profile())


def test_the_summary_lists_the_top_functions_with_control_characters_shown() -> None:
    snapshot = typed_snapshot()
    report = dataclasses.replace(snapshot.report, target_profile=summarize(profiled(30), "1%"))
    text = summary_table(report, profile_top=15)
    assert "target profile: py-spy at 100 Hz (pid 7), 40 samples" in text
    assert "handle\\x1b]0;pwned\\x07\\x1b[2J (app.py)" in text
    assert "\x1b" not in text
    assert "\x07" not in text


def test_diffs_profile_table_shows_the_changes_as_text() -> None:
    base = dataclasses.replace(typed_snapshot(seed=1), target_profile=profiled(10))
    new = dataclasses.replace(typed_snapshot(seed=2), target_profile=profiled(90))
    text = render_text(compare([base], [new]))
    assert "target profile: share of the running samples" in text
    assert "handle\\x1b]0;pwned" in text
    assert "\x1b" not in text
