"""The HTML report in a real headless Chromium: no console error, every chart drawn, offline.

Needs Debian's ``chromium`` (``scripts/setup`` installs it); skipped only when
it is absent. Chromium's proxy points at a closed loopback port and every
request the page makes is recorded: only the file itself and ``data:`` URLs
(Bokeh's toolbar icons) may appear.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from protobench.htmlreport.compare import compare_page
from protobench.htmlreport.page import run_page
from protobench.htmlreport.view import run_view
from tests.support.browser import browser, find_chromium
from tests.support.html_snapshot import report_snapshot
from tests.support.snapshots import typed
from tests.support.timing import S

CHROMIUM = find_chromium()
MIN_COLORED_PIXELS = 150
"""A drawn chart has its coloured lines; an empty canvas or axes alone have none."""

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (scripts/setup installs it)"
    ),
]


def _check_page(page: Path, expected_charts: int) -> None:
    assert CHROMIUM is not None
    assert page.read_text().count('class="chart"') == expected_charts
    with browser(CHROMIUM, height=1600) as chromium:
        loaded = chromium.load(page, MIN_COLORED_PIXELS, timeout=60 * S)
        png = chromium.screenshot()
    assert loaded.errors == []
    assert loaded.requests[0] == page.as_uri()
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert len(loaded.charts) == expected_charts
    undrawn = {name: n for name, n in loaded.charts.items() if n < MIN_COLORED_PIXELS}
    assert undrawn == {}
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (1280, 1600)
    colors = image.getcolors(maxcolors=1 << 20)
    assert colors is not None
    assert len(colors) > 50  # text, tables and coloured lines, not a blank page


def test_report_page_in_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(run_page(run_view(typed(report_snapshot()))), encoding="utf-8")
    _check_page(page, 16)


def test_comparison_page_in_chromium(tmp_path: Path) -> None:
    page = tmp_path / "compare.html"
    views = [run_view(typed(report_snapshot()))]
    page.write_text(compare_page(views, views, "diff table"), encoding="utf-8")
    _check_page(page, 12)
