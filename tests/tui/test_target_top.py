"""The monitor's target panel: the last profile chunk's top functions, hidden without one."""

from __future__ import annotations

import re

import pytest

from protobench.engine.events import ProfileUpdate
from protobench.engine.stacks.model import FunctionShare
from protobench.tui.app import MonitorApp
from tests.support.fake_source import FakeSource
from tests.support.pilot import panel_text, screen_text, settle
from tests.support.scripted_run import Script, scripted_run

pytestmark = pytest.mark.anyio

SIZE = (160, 48)


def chunk(elapsed: float, hot: str, share: float) -> ProfileUpdate:
    top = [
        FunctionShare(
            function=hot,
            file="app.py",
            self_samples=60,
            self_share=share,
            total_samples=60,
            total_share=share,
        ),
        FunctionShare(
            function="parse",
            file="lib.py",
            self_samples=10,
            self_share=0.1,
            total_samples=20,
            total_share=0.2,
        ),
    ]
    return ProfileUpdate(
        elapsed=elapsed, tool="py-spy", seconds=2.0, samples=200, running=100, top=top
    )


def app_with(updates: list[ProfileUpdate]) -> tuple[MonitorApp, FakeSource]:
    run = scripted_run(Script())
    events = list(run.events)
    events[-1:-1] = updates  # before the held end
    fake = FakeSource(events)
    return MonitorApp(fake, None, refresh=0.0, chart_refresh=0.0), fake


async def test_the_newest_chunk_replaces_the_list() -> None:
    app, fake = app_with([chunk(4.0, "handle_old", 0.5), chunk(6.0, "burn_cpu", 0.6)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        panel = app.monitor.query_one("#target-top")
        assert panel.display
        text = panel_text(app, "#target-top")
        assert "burn_cpu" in text
        assert "handle_old" not in text
        assert "waiting 50%" in text
        assert "60.0%" in text
        assert panel.border_title == "target · py-spy · last 2s"


async def test_the_panel_stays_hidden_without_profiling() -> None:
    app, fake = app_with([])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        assert not app.monitor.query_one("#target-top").display


async def test_the_panel_fits_each_layout() -> None:
    """Beside the charts from 120×36; in the resources view (4) on a compact terminal."""
    for size, keys in (((160, 48), ()), ((80, 24), ("4",))):
        app, fake = app_with([chunk(6.0, "burn_cpu", 0.6)])
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app, fake)
            for key in keys:
                await pilot.press(key)
            await pilot.pause(0.3)
            screen = screen_text(app)
            assert "target · py-spy · last 2s" in screen, size
            assert re.search(r"60\.0%\s+60\.0%\s+burn_cpu", screen), size
