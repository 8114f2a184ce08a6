"""The monitor shows a tampered snapshot's strings as text (never commands, never markup), and
writes them exactly to the JSON report (``s``); a run that measured nothing shows its
thresholds as not evaluated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protobench.engine.events import RunFinished
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.display import Display
from protobench.tui.model import RunModel
from protobench.tui.source import ReplaySource
from protobench.tui.widgets.panel import Panel
from protobench.tui.widgets.run_summary import RunSummary
from protobench.tui.widgets.threshold_list import ThresholdList
from tests.support.hostile import EVERYTHING, assert_no_escapes, hostile_snapshot
from tests.support.pilot import text_of, wait_for
from tests.support.report_frames import frame, plan_of, report_of

SIZE = (160, 50)
RUN_ID = "20250101-000000-hostile-0001"


@pytest.mark.anyio
async def test_every_panel_and_toast_shows_a_tampered_snapshots_words_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    hostile_snapshot(tmp_path / "store", RUN_ID, f"host {EVERYTHING}", op="get")
    snapshot = SnapshotStore(tmp_path / "store").load("latest")
    app = MonitorApp(ReplaySource(snapshot, speed=1000.0), refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.finished)
        for view in ("2", "3", "4", "5"):  # every view is built when first shown
            await pilot.press(view)
            await pilot.pause()
        await wait_for(pilot, lambda: len(app.monitor.query_one("#views").children) == 5)
        display = app.display_now()
        shown = [text_of(p.render_display(display), 150) for p in app.monitor.query(Panel)]
        toasts = [(n.title, n.message, n.markup) for n in app._notifications]
        await pilot.press("s")
        await pilot.pause()
    everything = "\n".join(shown)
    assert_no_escapes(everything.encode(), plain=True)
    assert "profile \\x1b]0;PWNED-TITLE\\x07" in everything
    assert "[bold]BOLD[/bold]" in everything  # markup shown as it is, not applied
    assert toasts, "the worker's notice is an alert"
    for title, message, markup in toasts:
        assert not markup
        assert_no_escapes(f"{title} {message}".encode(), plain=True)
    written = json.loads((tmp_path / f"{RUN_ID}.report.json").read_text())
    assert written["profile"] == f"profile {EVERYTHING}"  # the exact string, in JSON


def test_a_run_that_measured_nothing_shows_its_thresholds_as_not_evaluated() -> None:
    plan = plan_of({"get": 2}, ("error_rate < 0.5%",))
    report = report_of(plan, [frame("sustain", 0, 0.0, 1.0, {"get": {}})])
    model = RunModel()
    model.apply(RunFinished(report, 3))
    view = model.view()
    assert [(t.expr, t.ok) for t in view.thresholds] == [("error_rate < 0.5%", None)]
    listed = text_of(ThresholdList().render_display(Display(view)))
    summary = text_of(RunSummary().render_display(Display(view)), 150)
    for text in (listed, summary):
        assert "error_rate < 0.5%  not evaluated: nothing measured" in text
        assert "✔" not in text
