"""Helpers of the monitor's tests: a scripted app, waiting on a pilot, plain text of panels."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console, RenderableType
from textual.message import Message
from textual.pilot import Pilot

from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.widgets.panel import Panel
from tests.support.fake_source import FakeSource
from tests.support.scripted_run import Script, scripted_run
from tests.support.timing import S

WAIT_LIMIT = 20 * S


def scripted_app(
    script: Script | None = None,
    store: SnapshotStore | None = None,
    log_dir: Path | None = None,
) -> tuple[MonitorApp, FakeSource]:
    """A monitor on a fake source that replays a scripted run (and holds its end)."""
    run = scripted_run(script or Script())
    fake = FakeSource(run.events, log_dir=log_dir)
    app = MonitorApp(fake, store, refresh=0.0, chart_refresh=0.0)
    return app, fake


async def wait_for(pilot: Pilot[int], predicate: Callable[[], bool]) -> None:
    """Let the app run until ``predicate()`` holds (bounded; fails the test if it never does)."""
    waited = 0.0
    while not predicate():
        assert waited < WAIT_LIMIT, "condition not reached"
        await pilot.pause(0.02)
        waited += 0.02


async def settle(pilot: Pilot[int], app: MonitorApp, fake: FakeSource) -> None:
    """Wait until every scripted event but the held end has been shown."""
    await wait_for(pilot, lambda: fake.emitted >= len(fake.events) - 1)
    await pilot.pause()
    await wait_for(pilot, lambda: not app.feed.pending)
    await wait_for(pilot, lambda: app.view.elapsed == app.feed.model.elapsed)
    await pilot.pause()


def text_of(renderable: RenderableType, width: int = 120) -> str:
    """A renderable as plain text."""
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def screen_text(app: MonitorApp) -> str:
    """What the terminal shows now, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def panel_text(app: MonitorApp, selector: str, width: int = 120) -> str:
    """What the panel ``selector`` of the monitor shows now, as plain text."""
    panel = app.monitor.query_one(selector, Panel)
    return text_of(panel.render_display(app.display_now()), width)


def of_type[T: Message](messages: list[Message], kind: type[T]) -> list[T]:
    return [m for m in messages if isinstance(m, kind)]
