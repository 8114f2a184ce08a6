"""SVG snapshots of the monitor at its minimum size (100×30), on deterministic sources.

Regenerate after an intended change of the screens with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

from protobench.tui.app import MonitorApp
from protobench.tui.script import Script, scripted_snapshot
from protobench.tui.source import ReplaySource
from tests.tui.helpers import scripted_app, settle, wait_for

SIZE = (100, 30)
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
