"""A run that cannot start: a readable error panel, and ``q`` exits with code 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from protobench.tui.app import MonitorApp
from protobench.tui.source import Emit
from tests.support.pilot import panel_text, wait_for

pytestmark = pytest.mark.anyio


class FailingSource:
    """A live-like source whose engine fails before the run starts."""

    kind = "live"
    controls = frozenset({"pause", "stop"})
    log_dir: Path | None = None

    async def run(self, emit: Emit) -> None:
        del emit
        try:
            raise OSError("cannot spawn worker 1: [Errno 24] Too many open files")
        except OSError as exc:
            raise ExceptionGroup("unhandled errors in a TaskGroup", [exc]) from None

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def set_rate_factor(self, factor: float) -> None: ...

    def set_speed(self, speed: float) -> None: ...

    def seek(self, seconds: float) -> None: ...

    def stop(self, reason: str) -> None: ...


async def test_a_run_that_cannot_start_shows_one_readable_line_and_q_exits_3() -> None:
    app = MonitorApp(FailingSource(), refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.error is not None)
        await pilot.pause()
        summary = panel_text(app, "#run-summary")
        assert "the run failed: cannot spawn worker 1: [Errno 24] Too many open files" in summary
        assert "ExceptionGroup" not in summary
        assert "TaskGroup" not in summary
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == 3  # what run_live returns as the exit code
