"""The monitor at every terminal size (issue 30): what each layout shows, read off the screen.

Each test runs the monitor on a scripted open-model run (two ops, errors of two
kinds) and reads the terminal's text as the user would see it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator

import pytest
from textual.widget import Widget

from protobench.tui.app import MonitorApp
from protobench.tui.screens.monitor import layout_of
from tests.support.pilot import screen_text, scripted_app, settle, wait_for
from tests.support.scripted_run import Script

pytestmark = pytest.mark.anyio

OPEN = Script(rate=800.0)
LATENCY = r"[\d.]+(µs|ms)"


def row(screen: str, name: str) -> str:
    """The screen's line where the latency table's row of ``name`` is."""
    pattern = re.compile(rf"│ {name}\s+[\d,.]+\s+{LATENCY}")
    lines = [line for line in screen.splitlines() if pattern.search(line)]
    assert lines, f"no latency row of {name} on:\n{screen}"
    return lines[0]


@contextlib.asynccontextmanager
async def monitor_at(size: tuple[int, int]) -> AsyncIterator[tuple[MonitorApp, str]]:
    """The monitor of the scripted run at ``size``, every interval shown, and its screen."""
    app, fake = scripted_app(OPEN)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app, fake)
        await pilot.pause(0.1)
        yield app, screen_text(app)


def visible(app: MonitorApp, selector: str) -> bool:
    widget = app.monitor.query_one(selector, Widget)
    return widget.display and all(a.display for a in widget.ancestors if isinstance(a, Widget))


def test_the_layouts_by_size() -> None:
    assert layout_of(59, 30) is None
    assert layout_of(60, 20) == "tiny"
    assert layout_of(80, 24) == "compact"
    assert layout_of(119, 60) == "compact"
    assert layout_of(120, 36) == "standard"
    assert layout_of(160, 48) == "standard"
    assert layout_of(220, 60) == "large"


async def test_at_80x24_the_compact_layout_shows_progress_rates_percentiles_and_keys() -> None:
    async with monitor_at((80, 24)) as (app, screen):
        lines = screen.splitlines()
        assert len(lines) == 24
        assert all(len(line) == 80 for line in lines)
        assert "open model · 800/s" in lines[1]
        assert re.search(r"SUSTAIN\s+━+ 0:12 / 0:12", lines[2])
        assert "throughput · ops/s and errors/s" in screen
        assert re.search(r"errors [\d.]+/s", screen)
        assert re.search(r"get [\d.]+/s", screen)
        header = next(line for line in lines if "ops/s" in line and "p50" in line)
        assert re.search(r"p50\s+p95\s+p99\s+p99\.9", header)
        # the total first (the rows a short terminal cuts are ops), then each op
        assert lines.index(row(screen, "total")) < lines.index(row(screen, "get"))
        assert row(screen, "post")
        assert "✔ p99 < 20ms" in screen  # the thresholds
        assert lines[-1].rstrip().endswith("? Help")
        assert " q Stop " in lines[-1]
        for hidden in ("#resources-now", "#counters-now", "#latency-chart-now"):
            assert not visible(app, hidden)


async def test_at_60x20_every_line_is_whole_and_p50_p99_stay() -> None:
    async with monitor_at((60, 20)) as (app, screen):
        lines = screen.splitlines()
        assert app.monitor.layout_name == "tiny"
        assert lines[0].startswith(" protobench scripted · http → http://127.0.0.1:8080/")
        assert "(scripted target)" not in screen  # left out rather than wrapped
        assert re.search(r"SUSTAIN\s+━+ 0:12 / 0:12", lines[2])
        assert "throughput" in screen
        assert re.search(r"op\s+ops/s\s+p50\s+p99\s*│", screen)
        assert row(screen, "total")
        assert lines[-1].rstrip().endswith("? Help")


async def test_at_60x20_a_failing_threshold_is_a_badge_in_the_header() -> None:
    """The tiny layout has no thresholds panel (nor the generator's delay under it): a
    failing threshold is a badge in the header's phase line instead."""
    app, fake = scripted_app(Script(rate=800.0, thresholds=("p99 < 1us", "error_rate < 90%")))
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot, app, fake)
        await pilot.pause(0.1)
        lines = screen_text(app).splitlines()
        assert not visible(app, "#thresholds-main")
        assert "✘ p99 < 1us" in lines[2], lines[2]


async def test_below_60x20_a_line_says_the_size_and_the_header_stays() -> None:
    async with monitor_at((50, 16)) as (_, screen):
        assert "50×16" in screen
        assert "60×20" in screen
        assert "SUSTAIN" in screen


async def test_at_160x48_the_standard_layout_adds_latency_over_time_resources_and_codes() -> None:
    async with monitor_at((160, 48)) as (app, screen):
        assert "latency over time · total · corrected" in screen
        assert re.search(rf"p50 {LATENCY}", screen)
        assert re.search(rf"p99 {LATENCY}", screen)
        assert "workers (% of one core)" in screen
        assert "thresholds · live" in screen
        assert "errors by code · 14" in screen
        assert re.search(r"protocol:503 █+\s+8\s+57\.1%", screen)
        assert re.search(r"timeout\s+█+\s+6\s+42\.9%", screen)
        header = next(line for line in screen.splitlines() if "ops/s" in line and "p50" in line)
        assert re.search(r"p50\s+p90\s+p95\s+p99\s+p99\.9\s+max", header)
        assert "counters · whole sustain" in screen
        assert not visible(app, "#code-chart-now")


async def test_at_220x60_the_screen_is_used_charts_side_by_side_and_errors_over_time() -> None:
    async with monitor_at((220, 60)) as (app, screen):
        throughput = app.monitor.query_one("#throughput").region
        latency = app.monitor.query_one("#latency-chart-now").region
        assert throughput.y == latency.y
        assert throughput.right <= latency.x
        assert min(throughput.width, latency.width) >= 60
        assert re.search(rf"p99\.9 {LATENCY}", screen)  # tall enough for the tail
        assert "errors/s by code" in screen
        assert re.search(r"protocol:503 [\d.]+/s", screen)
        # little is left empty: the panels cover most of the space between header and keys
        views = app.monitor.query_one("#views").region
        panels = [
            w.region
            for w in app.monitor.query_one("#overview").query(".panel")
            if visible(app, f"#{w.id}")
        ]
        covered = sum(r.area for r in panels)
        assert covered >= 0.9 * views.area, f"{covered} of {views.area} cells"


async def test_the_generators_delay_is_beside_the_thresholds_and_in_the_summary() -> None:
    """With the kernel's clock, each reply's wait in the generator (``generator_delay_us``)
    is shown compactly under the thresholds, at 80×24 and 160×48, and in the summary."""
    for size in ((80, 24), (160, 48)):
        app, fake = scripted_app(Script(rate=800.0, delay_ns=42_000))
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app, fake)
            await pilot.pause(0.1)
            screen = screen_text(app)
            assert "generator delay p50 42µs · p99 42µs" in screen, (size, screen)
            fake.finish()
            await wait_for(pilot, lambda app=app: app.finished)
            await pilot.pause(0.2)
            summary = screen_text(app)
            assert "generator delay p50 4" in summary, size
    app, fake = scripted_app(OPEN)  # the user's clock: no such line
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app, fake)
        assert "generator delay" not in screen_text(app)
