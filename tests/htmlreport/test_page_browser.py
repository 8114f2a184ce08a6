"""The report pages in a real headless Chromium: no console error, no request, every chart drawn
and readable (plain tick labels in their units that do not overprint, legends under the plot,
mark labels inside it, the percentile axis reaching 99.99%).

Needs Debian's ``chromium`` (``scripts/setup`` installs it); skipped only when it is absent.
Chromium's proxy points at a closed loopback port and every request the page makes is
recorded: only the file itself may appear.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from protobench.cli.diff_text import render_text
from protobench.htmlreport.compare import compare_page
from protobench.htmlreport.page import run_page
from protobench.htmlreport.view import run_view
from protobench.snapshots.diff import compare
from tests.support.browser import Browser, browser, find_chromium
from tests.support.html_snapshot import report_snapshot
from tests.support.snapshots import OpSpec, make_snapshot, typed
from tests.support.timing import S

CHROMIUM = find_chromium()
MIN_COLORED_PIXELS = 150
"""A drawn chart has its coloured lines; an empty canvas or axes alone have none."""
LATENCY_LABEL = re.compile(r"^(0|\d+(\.\d+)? (µs|ms|s))$")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (scripts/setup installs it)"
    ),
]


def _load(page: Path, expected_charts: int, chromium: Browser, colored: int) -> dict[str, Any]:
    assert page.read_text().count('<figure class="chart"') == expected_charts
    loaded = chromium.load(page, colored, timeout=60 * S)
    assert loaded.errors == []
    assert loaded.requests[0] == page.as_uri()
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert len(loaded.charts) == expected_charts
    undrawn = {name: n for name, n in loaded.charts.items() if n < colored}
    assert undrawn == {}
    return chromium.drawn_charts()


def _assert_readable(charts: dict[str, dict[str, Any]], spec: dict[str, Any]) -> None:
    """Every chart drew something, with labels a person reads, where they can be read."""
    for name, chart in charts.items():
        drawn = chart["drawn"]
        assert drawn is not None, name
        assert drawn["points"] > 0, name
        assert chart["legendTop"] >= chart["canvasBottom"] - 1, name  # legend off the curves
        ticks = drawn["ticks"]
        for axis in ("x", "y", "y2"):
            labels = [t["label"] for t in ticks[axis]]
            assert not [x for x in labels if re.search(r"\de[+-]?\d", x)], (name, labels)
            assert len(labels) == len(set(labels)), (name, axis, labels)  # no repeated label
        assert len(ticks["x"]) >= 2, name
        assert len(ticks["y"]) >= 2, name
        for left, right in zip(ticks["x"], ticks["x"][1:], strict=False):
            assert left["right"] + 4 <= right["left"], (name, left, right)  # no overprint
        for axis in ("y", "y2"):
            for upper, lower in zip(ticks[axis][1:], ticks[axis], strict=False):
                assert upper["bottom"] <= lower["top"] + 1, (name, upper, lower)
        if spec[name]["y"]["unit"] == "us":
            assert all(LATENCY_LABEL.match(t["label"]) for t in ticks["y"]), (name, ticks["y"])
        plot = drawn["plot"]
        for mark in drawn["marks"]:  # phase and notice labels whole, inside the plot
            assert plot["left"] <= mark["left"] <= mark["right"] <= plot["left"] + plot["width"]
            assert plot["top"] <= mark["top"] <= mark["bottom"] <= plot["top"] + plot["height"]


def _spec(page: Path) -> dict[str, Any]:
    import json  # noqa: PLC0415

    found = re.search(r'id="pb-charts">(.*?)</script>', page.read_text(), re.S)
    assert found is not None
    charts: dict[str, Any] = json.loads(found.group(1))["charts"]
    return charts


def test_report_page_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    page = tmp_path / "report.html"
    page.write_text(run_page(run_view(typed(report_snapshot()))), encoding="utf-8")
    with browser(CHROMIUM, height=1600) as chromium:
        charts = _load(page, 22, chromium, MIN_COLORED_PIXELS)
        png = chromium.screenshot()
    _assert_readable(charts, _spec(page))
    spectrum = [t["label"] for t in charts["overview-spectrum"]["drawn"]["ticks"]["x"]]
    assert spectrum == ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
    marks = {m["label"] for m in charts["overview-throughput"]["drawn"]["marks"]}
    assert {"warmup", "paused", "rate set to 4000/s", "worker 1 exited with code 1"} <= marks
    target = charts["res-target"]["drawn"]["ticks"]
    assert all(t["label"].endswith("MiB") for t in target["y2"])  # memory on its own axis
    assert all(t["label"].endswith("%") for t in target["y"])
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (1280, 1600)
    colors = image.getcolors(maxcolors=1 << 20)
    assert colors is not None
    assert len(colors) > 50  # text, tables and coloured lines, not a blank page


def test_a_sparse_operation_is_drawn_as_points(tmp_path: Path) -> None:
    """One exchange every 2 s in 0.25 s intervals: no two latencies side by side, no line."""
    assert CHROMIUM is not None
    snapshot = make_snapshot({"read": OpSpec(), "object-list": OpSpec(rate=0.5)}, seed=3)
    for record in snapshot["series"][1::2]:  # the sparse op has no success every other interval
        figures = record["ops"]["object-list"]
        figures.update(ok=0, latency_us={"count": 0}, hist="")
    page = tmp_path / "sparse.html"
    page.write_text(run_page(run_view(typed(snapshot))), encoding="utf-8")
    with browser(CHROMIUM) as chromium:
        chromium.load(page, 0, timeout=60 * S)
        charts = chromium.drawn_charts()
    latency = charts["op2-latency"]["drawn"]
    sparse = [r for r in snapshot["series"] if r["ops"]["object-list"]["ok"]]
    assert latency["dots"] == len(sparse) * 6  # each percentile's latency, alone: a dot
    assert charts["op1-latency"]["drawn"]["dots"] == 0  # read has a latency every interval


def test_a_ten_minute_run_keeps_its_labels_apart(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    snapshot = make_snapshot({"get": OpSpec(rate=200.0)}, intervals=600, interval=1.0, seed=5)
    page = tmp_path / "long.html"
    page.write_text(run_page(run_view(typed(snapshot))), encoding="utf-8")
    with browser(CHROMIUM) as chromium:
        charts = _load(page, page.read_text().count('<figure class="chart"'), chromium, 150)
    _assert_readable(charts, _spec(page))
    labels = [t["label"] for t in charts["op1-throughput"]["drawn"]["ticks"]["x"]]
    assert labels[:3] == ["0:00", "2:00", "4:00"]  # m:ss past three minutes


def test_comparison_page_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    base = typed(make_snapshot({"get": OpSpec(), "put": OpSpec(rate=500.0)}, seed=1))
    new = typed(make_snapshot({"get": OpSpec(median_us=2000.0), "put": OpSpec(rate=500.0)}, seed=2))
    diff = compare([base], [new], gates=[])
    page = tmp_path / "compare.html"
    page.write_text(
        compare_page([run_view(base)], [run_view(new)], diff, render_text(diff)), encoding="utf-8"
    )
    with browser(CHROMIUM, height=1600) as chromium:
        charts = _load(page, 12, chromium, MIN_COLORED_PIXELS)
    _assert_readable(charts, _spec(page))
    spectrum = [t["label"] for t in charts["cmp1-spectrum"]["drawn"]["ticks"]["x"]]
    assert "99.99%" in spectrum


def _plot_box(chromium: Browser, chart: str) -> dict[str, float]:
    """The chart's plot area in viewport pixels, scrolled into view."""
    where = f"document.querySelector('figure[data-chart=\"{chart}\"] canvas')"
    chromium.evaluate(f"{where}.scrollIntoView({{block: 'center'}})")
    box = chromium.evaluate(
        f"(() => {{ const r = {where}.getBoundingClientRect();"
        f" const p = window.protobenchCharts['{chart}'].plot;"
        " return {left: r.left + p.left, top: r.top + p.top, width: p.width, height: p.height};"
        " })()"
    )
    assert isinstance(box, dict)
    return box


def test_hover_zoom_and_legend(tmp_path: Path) -> None:
    """A tooltip reads the values under the pointer; a drag across one time chart zooms every
    time chart (not the spectrum), a double-click zooms out; a legend entry hides its line."""
    assert CHROMIUM is not None
    page = tmp_path / "report.html"
    page.write_text(run_page(run_view(typed(report_snapshot()))), encoding="utf-8")
    with browser(CHROMIUM, height=900) as chromium:
        _load(page, 22, chromium, MIN_COLORED_PIXELS)
        full = chromium.drawn_charts()
        box = _plot_box(chromium, "overview-throughput")
        middle = box["top"] + box["height"] / 2
        chromium.mouse("mouseMoved", box["left"] + box["width"] * 0.6, middle)
        tip = chromium.evaluate(
            "document.querySelector('figure[data-chart=\"overview-throughput\"] .tip').innerText"
        )
        lines = tip.splitlines()
        assert re.fullmatch(r"\d+(\.\d+)? s", lines[0])
        assert [line.split(":")[0] for line in lines[1:]] == ["ok/s", "errors/s", "offered/s"]
        assert re.fullmatch(r"ok/s: [\d,.]+/s", lines[1])

        start, end = box["left"] + box["width"] * 0.25, box["left"] + box["width"] * 0.5
        chromium.mouse("mousePressed", start, middle)
        chromium.mouse("mouseMoved", end, middle)
        chromium.mouse("mouseReleased", end, middle)
        zoomed = chromium.drawn_charts()
        span = full["op1-latency"]["drawn"]["x"]
        low, high = zoomed["op1-latency"]["drawn"]["x"]
        assert low == pytest.approx(span[0] + 0.25 * (span[1] - span[0]), rel=0.05)
        assert high == pytest.approx(span[0] + 0.5 * (span[1] - span[0]), rel=0.05)
        assert zoomed["overview-spectrum"]["drawn"]["x"] == full["overview-spectrum"]["drawn"]["x"]
        assert zoomed["op1-latency"]["drawn"]["points"] < full["op1-latency"]["drawn"]["points"]

        box = _plot_box(chromium, "op2-latency")
        chromium.mouse("mousePressed", box["left"] + 10, box["top"] + 10, clicks=2)
        chromium.mouse("mouseReleased", box["left"] + 10, box["top"] + 10, clicks=2)
        assert chromium.drawn_charts()["op1-latency"]["drawn"]["x"] == span

        chromium.evaluate(
            "[...document.querySelectorAll('figure[data-chart=\"op1-latency\"] .legend .key')]"
            ".find((k) => k.textContent === 'max').click()"
        )
        drawn = chromium.drawn_charts()["op1-latency"]["drawn"]
        assert drawn["visible"] == ["p50", "p90", "p95", "p99", "p99.9", "our own delay p99"]
        assert drawn["points"] < full["op1-latency"]["drawn"]["points"]
        errors = chromium.load(page, 0).errors  # nothing above logged an error
    assert errors == []
