"""What the charts draw (issue 30): colours apart for colour-blind viewers, the baseline of a
focused op, a filter that says so and scales to its ops, latency over time by the toggle."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from protobench.tui.app import MonitorApp
from protobench.tui.baseline import Baseline
from protobench.tui.charts import (
    BASELINE_STYLE,
    ERROR_STYLE,
    OP_STYLES,
    TOTAL_STYLE,
    latency_chart,
    throughput_chart,
)
from protobench.tui.display import Display
from tests.support.pilot import panel_text, screen_text, scripted_app, settle
from tests.support.scripted_run import Script, scripted_snapshot

pytestmark = pytest.mark.anyio

# Machado, Oliveira & Fernandes (2009), severity 1, on linear RGB.
VISION = {
    "normal": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": (
        (0.152286, 1.052583, -0.204868),
        (0.114503, 0.786281, 0.099216),
        (-0.003882, -0.048116, 1.051998),
    ),
    "deuteranopia": (
        (0.367322, 0.860646, -0.227968),
        (0.280085, 0.672501, 0.047413),
        (-0.011820, 0.042940, 0.968881),
    ),
    "tritanopia": (
        (1.255528, -0.076749, -0.178779),
        (-0.078411, 0.930809, 0.147602),
        (0.004733, 0.691367, 0.303900),
    ),
}
XTERM_LEVELS = (0, 95, 135, 175, 215, 255)
DARK = "#121212"


def _rgb(colour: str) -> tuple[int, int, int]:
    hex_digits = colour.rsplit(maxsplit=1)[-1].lstrip("#")
    r, g, b = (int(hex_digits[i : i + 2], 16) for i in (0, 2, 4))
    return r, g, b


def _xterm256(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The colour a 256-colour terminal shows for ``rgb`` (its 6×6×6 cube)."""
    r, g, b = (min(XTERM_LEVELS, key=lambda level, v=v: abs(level - v)) for v in rgb)
    return r, g, b


def _lab(rgb: tuple[int, int, int], vision: str) -> tuple[float, float, float]:
    linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    seen = [
        min(max(sum(m * c for m, c in zip(row, linear, strict=True)), 0.0), 1.0)
        for row in VISION[vision]
    ]
    r, g, b = seen
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def distance(a: str, b: str, vision: str, terminal: bool) -> float:
    """CIE76 ΔE between two colours as ``vision`` sees them (on a 256-colour terminal)."""
    ra, rb = _rgb(a), _rgb(b)
    if terminal:
        ra, rb = _xterm256(ra), _xterm256(rb)
    return math.dist(_lab(ra, vision), _lab(rb, vision))


@pytest.mark.parametrize("vision", VISION)
@pytest.mark.parametrize("terminal", [False, True], ids=["truecolor", "256 colours"])
def test_the_first_six_op_colours_stay_apart_for_colour_blind_viewers(
    vision: str, terminal: bool
) -> None:
    """Issue 30 (bacnet-ip's orange and yellow looked alike): the first six ops' colours, the
    errors' red, the baseline's grey and the total's white are ΔE >= 10 apart, and each is
    visible on a dark background, for each kind of vision, in true colour and in 256."""
    colours = [*OP_STYLES[:6], ERROR_STYLE, BASELINE_STYLE, TOTAL_STYLE]
    for a, b in itertools.combinations(colours, 2):
        assert distance(a, b, vision, terminal) >= 10, (a, b)
    for a, b in itertools.combinations(OP_STYLES[:3], 2):  # what most runs show
        assert distance(a, b, vision, terminal) >= 17, (a, b)
    for colour in OP_STYLES:
        assert distance(colour, DARK, vision, terminal) >= 40, colour


def test_every_op_colour_is_its_own() -> None:
    assert len(set(OP_STYLES)) == len(OP_STYLES) >= 10
    for a, b in itertools.combinations(OP_STYLES, 2):
        assert distance(a, b, "normal", terminal=False) >= 10, (a, b)


async def test_a_focused_op_keeps_its_own_baseline_curve() -> None:
    """Issue 30: focusing an op hid the baseline; it now draws the baseline's curve of that op
    (its throughput, and its p99 in the latency chart)."""
    baseline = Baseline.from_snapshot(scripted_snapshot(Script(per_second=300, seed=11)))
    app, fake = scripted_app()
    app.baseline = baseline
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("down", "down", "enter")
        display = app.display_now()
        assert display.focus == "post"
        chart = throughput_chart(display)
        assert [s.label for s in chart.series] == ["errors", "baseline", "post"]
        line = chart.series[1].values
        assert line == baseline.curve_at(app.view.times, "throughput", "post")
        assert line != baseline.curve_at(app.view.times, "throughput", "total")
        assert any(v > 0 for v in line)
        latency = latency_chart(display)
        assert [s.label for s in latency.series] == ["baseline p99", "p50", "p99", "p99.9"]
        assert latency.series[0].values == baseline.curve_at(app.view.times, "p99", "post")
        assert "post" in latency.title


MANY = Script(ops=("read-property", "read-multiple", "write-property", "cov"), per_second=4000)


async def test_a_filter_says_so_and_the_chart_scales_to_the_ops_it_shows() -> None:
    """Issue 30: with a filter on, the chart kept the total (and its scale), so the filtered
    ops lay flat, and nothing said a filter was on."""
    app, fake = scripted_app(MANY)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app, fake)
        app.op_filter = "write"
        app.render_view()
        await pilot.pause()
        display = app.display_now()
        chart = throughput_chart(display)
        assert [s.label for s in chart.series] == ["errors", "write-property"]
        assert "filter /write/: 1 of 4 ops" in chart.title
        assert "FILTER /write/" in panel_text(app, "#header")
        assert "filter /write/" in str(app.monitor.query_one("#throughput").border_title)
        top = app.monitor.query_one("#throughput").top  # type: ignore[attr-defined]
        shown = max(chart.series[1].values)
        total = max(app.view.throughput["total"])
        assert top < total  # the scale is the shown op's, not the total's
        assert shown <= top
        errors = chart.series[0].values
        assert errors == app.view.errors_per_second["write-property"]
        latency = latency_chart(display)
        assert [s.label for s in latency.series] == ["write-property p99"]


def _display(app: MonitorApp, corrected: bool) -> Display:
    return replace(app.display_now(), corrected=corrected)


async def test_latency_over_time_follows_the_corrected_toggle() -> None:
    app, fake = scripted_app(Script(rate=800.0))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app, fake)
        corrected = latency_chart(_display(app, True))
        uncorrected = latency_chart(_display(app, False))
        assert "corrected" in corrected.title
        assert "uncorrected" in uncorrected.title
        p99 = {
            c.title: next(s for s in c.series if s.label == "p99").values
            for c in (corrected, uncorrected)
        }
        # the scripted uncorrected latencies are 3/4 of the corrected ones
        a, b = p99[corrected.title], p99[uncorrected.title]
        assert len(a) == len(b) == len(app.view.times)
        assert all(u < c for c, u in zip(a, b, strict=True))
        await pilot.press("t")
        await pilot.pause()
        title = str(app.monitor.query_one("#latency-chart-now").border_title)
        assert title == "latency over time · total · uncorrected"


async def test_a_chart_without_a_value_yet_has_no_scale() -> None:
    """Before the first interval the charts show no tick (an empty latency chart said 1µs)."""
    app, fake = scripted_app(Script(rate=800.0))
    fake.events = fake.events[:1]  # the start only
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        screen = screen_text(app)
        assert "latency over time" in screen
        assert "µs" not in screen
        assert "ms┤" not in screen
        assert "/s┤" not in screen
