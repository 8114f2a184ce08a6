"""The HTML report's charting library: Bokeh against pygal on one snapshot.

Both draw the same view of the snapshot (``htmlreport.view.run_view``): per
operation and ``TOTAL`` the throughput, the latency percentiles per interval
and the percentile spectrum, and the CPU chart. Bokeh ships its JavaScript in
the wheel and draws on canvases in the browser (zoom, pan, hover, legends that
hide lines); pygal renders SVG in Python (no JavaScript offline: pygal's
tooltips script comes from a CDN, so the page is static). For each the script
prints the time to build the page in Python, its size, and the time for
headless Chromium to load it and draw every chart (median of ``--rounds``).
The report's own page (every chart) is measured the same way.

Run it as ``.venv/bin/python bench/report_charts.py SNAPSHOT [--rounds 3]``
(needs the ``report`` extra, pygal and Debian's chromium). Make a
10-minute snapshot with ``protobench run http-get --rate 200/s --duration 10m``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.browser import browser, find_chromium

from protobench.htmlreport import charts
from protobench.htmlreport.page import Charts, document, run_page
from protobench.htmlreport.view import PERCENTILES, RunView, run_view
from protobench.snapshots.store import SnapshotStore


def bokeh_page(view: RunView) -> str:
    """The same charts as :func:`pygal_page`, drawn by Bokeh."""
    out = Charts()
    x_range = charts.time_range(view.ops, view.marks)
    cells = []
    for index, (op, spec) in enumerate(zip(view.ops, view.spectra, strict=True)):
        source = charts.op_source(op)
        cells.append(out.cell(f"t{index}", charts.throughput(op, source, x_range, view.marks)))
        cells.append(out.cell(f"l{index}", charts.latency(op, source, x_range, view.marks)))
        cells.append(out.cell(f"s{index}", charts.run_spectrum(spec)))
    cells.append(out.cell("cpu", charts.cpu(view.resources, x_range, view.marks)))
    return document("bokeh", "".join(cells), out.figures)


def _nan_free(values: list[float | None]) -> list[float | None]:
    return [None if v is None or math.isnan(v) else v for v in values]


def pygal_page(view: RunView) -> str:
    """Throughput, latency per interval, spectrum per op and the CPU chart as inline SVG."""
    svgs = []
    options = {"js": [], "show_dots": False, "width": 800, "height": 300, "x_label_rotation": 0}
    for op, spec in zip(view.ops, view.spectra, strict=True):
        step = max(1, len(op.t) // 10)
        labels = [f"{t:.0f}" if i % step == 0 else "" for i, t in enumerate(op.t)]
        rate = pygal.Line(title=f"{op.name}: throughput", **options)
        rate.x_labels = labels
        rate.add("ok/s", op.ok_rate)
        rate.add("errors/s", op.error_rate)
        svgs.append(rate.render(is_unicode=True))
        lat = pygal.Line(title=f"{op.name}: latency", logarithmic=True, **options)
        lat.x_labels = labels
        for p in PERCENTILES:
            lat.add(p, _nan_free(op.latency[p]))
        svgs.append(lat.render(is_unicode=True))
        spectrum = pygal.XY(title=f"{op.name}: spectrum", logarithmic=True, **options)
        spectrum.add("corrected", [(1 / (1 - p / 100), v) for p, v in spec.corrected])
        if spec.uncorrected:
            spectrum.add("uncorrected", [(1 / (1 - p / 100), v) for p, v in spec.uncorrected])
        svgs.append(spectrum.render(is_unicode=True))
    cpu = pygal.Line(title="CPU", **options)
    for label, values in view.resources.worker_cpu.items():
        cpu.add(label, values)
    svgs.append(cpu.render(is_unicode=True))
    body = "".join(f'<div class="chart" data-chart="c{i}">{s}</div>' for i, s in enumerate(svgs))
    head = "<head><meta charset='utf-8'><title>pygal</title></head>"
    return f"<!DOCTYPE html><html>{head}<body>{body}</body></html>"


def measure(name: str, build: Callable[[], str], rounds: int, chromium: str, svg: bool) -> None:
    started = time.perf_counter()
    page = build()
    built = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.html"
        path.write_text(page, encoding="utf-8")
        times = []
        for _ in range(rounds):
            with browser(chromium) as b:
                loaded = b.load(path, 0 if svg else 150, timeout=60.0)
                if loaded.errors:
                    print(f"{name}: console errors {loaded.errors}")
                times.append(loaded.load_seconds if svg else loaded.drawn_seconds)
    size = len(page.encode()) / 1024
    spread = ", ".join(f"{t:.2f}" for t in times)
    print(
        f"{name:14} build {built:5.2f} s  size {size:7,.0f} KiB  "
        f"load+draw {statistics.median(times):5.2f} s (rounds {spread})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        sys.exit("chromium is not installed (scripts/setup installs it)")
    snapshot = SnapshotStore().load(args.snapshot)
    view = run_view(snapshot)
    print(f"snapshot {snapshot.id}: {len(snapshot.series)} intervals, {len(view.ops)} series")
    measure("bokeh (same)", lambda: bokeh_page(view), args.rounds, chromium, svg=False)
    measure("pygal (same)", lambda: pygal_page(view), args.rounds, chromium, svg=True)
    measure("report page", lambda: run_page(run_view(snapshot)), args.rounds, chromium, svg=False)


if __name__ == "__main__":
    main()
