"""SVG snapshots of the monitor at 80×24 (the compact layout) and at 160×48, on scripted sources.

Regenerate after an intended change of the screens with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from protobench.engine.report_model import to_plain
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.baseline import Baseline
from protobench.tui.source import ReplaySource
from tests.support.pilot import scripted_app, settle, wait_for
from tests.support.scripted_run import Script, scripted_snapshot

SIZE = (80, 24)
Compare = Callable[..., bool]
OPEN = Script(rate=800.0, thresholds=("p99 < 5ms", "error_rate < 1%"))


def test_main_view(snap_compare: Compare) -> None:
    app, fake = scripted_app(OPEN)

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot, app, fake)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_end_summary(snap_compare: Compare) -> None:
    app, fake = scripted_app(OPEN)

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot, app, fake)
        fake.finish()
        await wait_for(pilot, lambda: app.finished)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_replay_view(snap_compare: Compare) -> None:
    source = ReplaySource(scripted_snapshot(Script()), speed=1.0)
    source.pause()
    app = MonitorApp(source, refresh=0.0, chart_refresh=0.0)
    app.playback_paused = True

    async def run_before(pilot: Pilot[int]) -> None:
        await pilot.press("right")
        await wait_for(pilot, lambda: app.view.elapsed == 10.0)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


MANY = Script(
    ops=(
        "read-property",
        "read-property-multiple",
        "write-property",
        "write-property-multiple",
        "cov",
        "who-is",
        "object-list",
    ),
    thresholds=("p99 < 20ms",),
)


def test_many_ops_overview(snap_compare: Compare) -> None:
    """Seven ops at 160×48: every series named in the legend, every name whole."""
    app, fake = scripted_app(MANY)

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot, app, fake)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_focused_op_with_a_baseline(snap_compare: Compare, tmp_path: Path) -> None:
    """One op focused (its line, errors/s, percentiles, counters, errors) against a baseline."""
    store = SnapshotStore(tmp_path)
    baseline = scripted_snapshot(Script(per_second=300, seed=11))
    store.write(baseline.id, to_plain(baseline))
    app, fake = scripted_app(store=store)
    app.baseline = Baseline.from_snapshot(baseline)

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot, app, fake)
        await pilot.press("down", "down", "enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)
