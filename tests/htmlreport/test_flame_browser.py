"""The report's flame graphs in a real headless Chromium: drawn, interactive, offline.

A run page with a target profile (and a Go target's heap profile) and a
comparison page with a differential flame graph are loaded with Chromium's
proxy on a closed port: the page asks for nothing but itself, logs no error,
every ``.flame`` holder has its SVG with frames of colour, a click zooms into
a frame (it then spans the whole width) and a second click zooms out.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from protobench.engine.stacks.model import Frame, StackCounter, TargetProfile, share_changes
from protobench.htmlreport.compare import compare_page
from protobench.htmlreport.page import run_page
from protobench.htmlreport.view import RunView, run_view
from protobench.snapshots.diff import compare
from tests.support.browser import browser, find_chromium
from tests.support.html_snapshot import report_snapshot
from tests.support.snapshots import typed
from tests.support.timing import S

CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (scripts/setup installs it)"
    ),
]

FLAMES_JS = """
[...document.querySelectorAll('.flame')].map((f) => {
  const rects = [...f.querySelectorAll('rect')];
  const coloured = rects.filter((r) => r.getAttribute('fill') !== '#c8c8c8').length;
  return [f.dataset.flame, rects.length, coloured];
})
"""
ZOOM_JS = """
(() => {
  const flame = document.querySelector('.flame');
  const full = () => Number(flame.querySelector('rect').getAttribute('width'));
  const target = [...flame.querySelectorAll('rect')].find((r) =>
    r.querySelector('title').textContent.startsWith('hot '));
  const before = Number(target.getAttribute('width'));
  target.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  const zoomed = flame.querySelector('rect');
  const after = [zoomed.querySelector('title').textContent.split('\\n')[0], full()];
  zoomed.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  const back = flame.querySelector('rect').querySelector('title').textContent.split('\\n')[0];
  return [before, after, back];
})()
"""


def profile(hot: int, burn: int) -> TargetProfile:
    counter = StackCounter()
    root = [Frame(name="main", file="app.py", line=1, module="app")]
    handle = [*root, Frame(name="handle", file="app.py", line=9, module="app")]
    counter.add([*handle, Frame(name="hot", file="lib/x.py", line=3, module="lib.x")], hot)
    counter.add([*handle, Frame(name="burn_cpu", file="app.py", line=20, module="app")], burn)
    counter.add([*root, Frame(name="select", file="selectors.py", module="selectors")], 50, True)
    heap = StackCounter("bytes")
    heap.add(handle, 4096)
    return TargetProfile(
        tool="py-spy",
        pid=1,
        rate=100.0,
        end_s=10.0,
        cpu=counter.profile(),
        extra={"heap": heap.profile()},
    )


def view(hot: int, burn: int) -> RunView:
    made = run_view(typed(report_snapshot()))
    return dataclasses.replace(made, profile=profile(hot, burn), profile_overhead="1% at 100 Hz")


def test_the_run_pages_flame_graph_is_drawn_and_zooms(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    page = tmp_path / "report.html"
    page.write_text(run_page(view(300, 10)), encoding="utf-8")
    with browser(CHROMIUM, height=1600) as chromium:
        loaded = chromium.load(page, 150, timeout=60 * S)
        flames = chromium.evaluate(FLAMES_JS)
        before, (zoomed, width), back = chromium.evaluate(ZOOM_JS)
        full = chromium.evaluate("document.querySelector('.flame').clientWidth")
    assert loaded.errors == []
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert [name for name, _, _ in flames] == ["flame-run", "flame-heap"]
    assert all(rects >= 3 and coloured >= 2 for _, rects, coloured in flames)
    assert 0 < before < full
    assert zoomed == "hot (lib/x.py:3)"
    assert width == pytest.approx(full, abs=1)
    assert back == "all samples"


def test_the_comparison_pages_differential_flame_graph_is_drawn(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    base, new = view(300, 10), view(100, 210)
    assert base.profile is not None
    assert new.profile is not None
    changes = share_changes(base.profile.cpu, new.profile.cpu)
    page = tmp_path / "compare.html"
    snapshot = typed(report_snapshot())
    diff = compare([snapshot], [snapshot], gates=[])
    page.write_text(compare_page([base], [new], diff, "diff table", changes), encoding="utf-8")
    text = page.read_text()
    assert "burn_cpu" in text
    with browser(CHROMIUM, height=1600) as chromium:
        loaded = chromium.load(page, 150, timeout=60 * S)
        flames = chromium.evaluate(FLAMES_JS)
        fills = chromium.evaluate(
            "[...document.querySelectorAll('.flame rect')].map((r) => r.getAttribute('fill'))"
        )
    assert loaded.errors == []
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert flames[0][0] == "flame-diff"
    assert any(fill.startswith("rgb(255,") and fill != "rgb(255,235,235)" for fill in fills)  # grew
    assert any(fill.endswith(",255)") and fill != "rgb(235,235,255)" for fill in fills)  # shrank
