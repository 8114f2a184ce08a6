"""The charts of a report page, as data for the page's own script (``charts.js``).

A :class:`Chart` is a title, an x and a y axis (a second y axis when two
units share a chart, never two units on one axis) and its series, each drawn
from two named columns of the page's one JSON document (:class:`ChartSet`):
one operation's columns are written once for all its charts, numbers rounded
to 4 significant digits. Axes carry a unit (``us``, ``rate``, ``pct``,
``bytes``, ``count``, ``s``/``clock`` for time, ``percentile``) that the
script turns into plain tick labels (``500 µs``, ``2 ms``, ``1.5k``, ``99.9%``).
Time charts share the run's x range and marks (phases and pauses shaded, rate
changes and notices as labelled lines); legends sit under the plot.

The percentile spectrum is HdrHistogram's: ``1 / (1 - p)`` on a log x axis
(ticks 0%, 90%, 99%, ... 99.999%), latency on a linear y axis. The colours
are Okabe and Ito's, which stay apart for colour-blind readers.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Literal

import orjson

from protobench.htmlreport.view import LABELS, PERCENTILES, Mark, OpSeries, Resources, Spectrum

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
"""Okabe-Ito: blue, orange, green, vermillion, purple, sky blue, black."""
PERCENTILE_COLORS = dict(zip(PERCENTILES, PALETTE[:6], strict=True))
OK, ERRORS, OFFERED = "#009E73", "#D55E00", "#555555"
DELAY = "our own delay p99"
"""The generator's delay in taking up replies (kernel clock): drawn dashed, apart."""
STREAMS = "streams in flight per connection"
CLOCK_AFTER = 180.0
"""A run longer than this (seconds) has its time axis in m:ss."""
SCRIPT = resources.files(__package__).joinpath("charts.js").read_text(encoding="utf-8")

type Unit = Literal["us", "rate", "count", "pct", "bytes", "s", "clock", "percentile"]
type Kind = Literal["line", "points", "bar"]


@dataclass(frozen=True)
class Axis:
    unit: Unit
    label: str
    log: bool = False
    zero: bool = True
    """A linear axis starts at 0 (not for a latency that never is)."""


@dataclass(frozen=True)
class Series:
    """A line (a dot where a point has no neighbour), points, or stacked bars (``x0`` to ``x``)."""

    label: str
    x: str
    y: str
    color: str
    kind: Kind = "line"
    dash: bool = False
    width: float = 1.5
    axis: Literal[1, 2] = 1
    x0: str = ""


@dataclass(frozen=True)
class Chart:
    title: str
    x: Axis
    y: Axis
    series: list[Series]
    y2: Axis | None = None
    time: bool = True
    """On the run's shared time range, with its marks."""
    stacked: bool = False


def _round(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.4g}")


@dataclass
class ChartSet:
    """A page's charts by id and the columns they draw, for one JSON document."""

    columns: dict[str, list[float | None]] = field(default_factory=dict)
    charts: dict[str, Chart] = field(default_factory=dict)

    def column(self, name: str, values: Sequence[float | None]) -> str:
        """Keep a column (once) and return its name."""
        if name not in self.columns:
            self.columns[name] = [_round(v) for v in values]
        return name

    def cell(self, chart_id: str, chart: Chart | None) -> str:
        """The chart's place in the page ("" when there is nothing to draw)."""
        if chart is None:
            return ""
        self.charts[chart_id] = chart
        title = html.escape(chart.title)
        return (
            f'<figure class="chart" data-chart="{html.escape(chart_id)}">'
            f'<figcaption>{title}</figcaption><div class="plot"></div>'
            '<div class="legend"></div></figure>'
        )

    def script(self, time_range: tuple[float, float], marks: Sequence[Mark]) -> str:
        """The data document and the script that draws every chart ("" without a chart)."""
        if not self.charts:
            return ""
        data = {
            "time": list(time_range),
            "marks": [asdict(mark) for mark in marks],
            "columns": self.columns,
            "charts": {key: asdict(chart) for key, chart in self.charts.items()},
        }
        document = orjson.dumps(data).decode().replace("<", "\\u003c")
        return (
            f'<script type="application/json" id="pb-charts">{document}</script>'
            f"<script>{SCRIPT}</script>"
        )


def time_axis(end: float) -> Axis:
    """Seconds since the start; in m:ss for a run longer than three minutes."""
    if end > CLOCK_AFTER:
        return Axis("clock", "time since start (m:ss)")
    return Axis("s", "time since start")


def time_range(ops: Sequence[OpSeries], marks: Sequence[Mark]) -> tuple[float, float]:
    """The x range every time chart shares: from the run's start to its last interval."""
    ends = [t for op in ops for t in op.t[-1:]] + [m.end or m.start for m in marks]
    return 0.0, max(ends, default=1.0) or 1.0


def op_columns(out: ChartSet, key: str, op: OpSeries) -> None:
    """Write one operation's columns under ``key`` (``op0``, ``r1.op2``...), once."""
    if f"{key}.t" in out.columns:
        return
    out.column(f"{key}.t0", op.t0)
    out.column(f"{key}.t", op.t)
    out.column(f"{key}.ok", op.ok_rate)
    out.column(f"{key}.errors", op.error_rate)
    if op.offered is not None:
        out.column(f"{key}.offered", op.offered)
    for p in PERCENTILES:
        out.column(f"{key}.{p}", op.latency[p])
    for index, values in enumerate(op.errors.values()):
        out.column(f"{key}.error{index}", values)
    for index, values in enumerate(op.counters.values()):
        out.column(f"{key}.counter{index}", values)
    for p, delays in (op.delay or {}).items():
        out.column(f"{key}.delay_{p}", delays)
    if op.streams is not None:
        out.column(f"{key}.streams", op.streams)


def throughput(out: ChartSet, key: str, op: OpSeries, x: Axis, title: str = "") -> Chart:
    """ok/s and errors/s (and in the open model the rate offered) per interval."""
    op_columns(out, key, op)
    series = [
        Series("ok/s", f"{key}.t", f"{key}.ok", OK, width=2.0),
        Series("errors/s", f"{key}.t", f"{key}.errors", ERRORS),
    ]
    if op.offered is not None:  # drawn last: dashed over the achieved rate it matches
        series.append(Series("offered/s", f"{key}.t", f"{key}.offered", OFFERED, dash=True))
    return Chart(title or f"{op.name}: throughput", x, Axis("rate", "per second"), series)


def has_latency(op: OpSeries) -> bool:
    return any(v is not None for v in op.latency["max"])


def latency(
    out: ChartSet, key: str, op: OpSeries, x: Axis, shown: Sequence[str] = PERCENTILES
) -> Chart:
    """The percentiles ``shown`` per interval, on a log axis."""
    op_columns(out, key, op)
    series = [
        Series(LABELS[p], f"{key}.t", f"{key}.{p}", PERCENTILE_COLORS[p], width=2.0) for p in shown
    ]
    if op.delay is not None:  # the generator's own delay, apart from the latency
        series.append(Series(DELAY, f"{key}.t", f"{key}.delay_p99", OFFERED, dash=True))
    axis = Axis("us", "latency", log=True, zero=False)
    return Chart(f"{op.name}: latency over time", x, axis, series)


def each_op(out: ChartSet, ops: Sequence[tuple[str, OpSeries]], x: Axis, p: str = "p99") -> Chart:
    """Percentile ``p`` of each ``(key, operation)`` per interval, on a log axis (for runs
    whose operations' latencies are of different kinds: no total of them)."""
    series = []
    for index, (key, op) in enumerate(ops):
        op_columns(out, key, op)
        series.append(Series(op.name, f"{key}.t", f"{key}.{p}", _color(index), width=2.0))
    axis = Axis("us", "latency", log=True, zero=False)
    return Chart(f"{LABELS[p]} of each operation over time", x, axis, series)


def errors(out: ChartSet, key: str, op: OpSeries, x: Axis) -> Chart:
    """Errors per second by code, stacked per interval."""
    op_columns(out, key, op)
    series = [
        Series(code, f"{key}.t", f"{key}.error{index}", _color(index), "bar", x0=f"{key}.t0")
        for index, code in enumerate(op.errors)
    ]
    axis = Axis("rate", "errors per second")
    return Chart(f"{op.name}: errors by code", x, axis, series, stacked=True)


def has_counters(op: OpSeries) -> bool:
    return bool(op.counters) or op.streams is not None


def counters(out: ChartSet, key: str, op: OpSeries, x: Axis) -> Chart:
    """Every protocol counter the operation reports, per second; HTTP/2's streams in flight
    per connection on a second axis."""
    op_columns(out, key, op)
    series = [
        Series(name, f"{key}.t", f"{key}.counter{index}", _color(index))
        for index, name in enumerate(op.counters)
    ]
    y2 = None
    if op.streams is not None:
        series.append(Series(STREAMS, f"{key}.t", f"{key}.streams", OFFERED, width=2.0, axis=2))
        y2 = Axis("count", "streams per connection")
    return Chart(f"{op.name}: protocol counters", x, Axis("rate", "per second"), series, y2=y2)


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


SPECTRUM_X = "spectrum.x"


def spectrum(
    out: ChartSet,
    key: str,
    title: str,
    curves: Sequence[tuple[str, list[tuple[float, float]]]],
    delay: list[tuple[float, float]] | None = None,
) -> Chart:
    """Latency by percentile, HdrHistogram style: one line per ``(label, points)``, and the
    generator's own ``delay`` dashed."""
    shown = [(label, points, _color(index), False) for index, (label, points) in enumerate(curves)]
    series = []
    for index, (label, points, color, dash) in enumerate(
        [*shown, ("our own delay", delay, OFFERED, True)]
    ):
        if not points:
            continue
        out.column(SPECTRUM_X, [1.0 / (1.0 - p / 100.0) for p, _ in points])
        y = out.column(f"{key}.spectrum{index}", [v for _, v in points])
        series.append(Series(label, SPECTRUM_X, y, color, width=1.5 if dash else 2.0, dash=dash))
    x = Axis("percentile", "percentile (log scale of 1/(1-p))", log=True)
    return Chart(title, x, Axis("us", "latency"), series, time=False)


def run_spectrum(out: ChartSet, key: str, item: Spectrum) -> Chart:
    """One op's sustain spectrum; uncorrected beside corrected in the open model; the
    generator's own delay with the kernel's clock."""
    curves = [("corrected" if item.uncorrected is not None else "latency", item.corrected)]
    if item.uncorrected is not None:
        curves.append(("uncorrected", item.uncorrected))
    title = f"{item.name}: latency by percentile (sustain)"
    return spectrum(out, key, title, curves, item.delay)


def _resource(
    out: ChartSet,
    res: Resources,
    label: str,
    key: str,
    values: list[float | None],
    color: str,
    axis: Literal[1, 2] = 1,
) -> Series:
    """A column of the resource samples as a series (``key`` names the column, once a page)."""
    t = out.column("res.t", res.t)
    return Series(label, t, out.column(f"res.{key}", values), color, axis=axis)


def cpu(out: ChartSet, res: Resources, x: Axis) -> Chart:
    """Each worker's CPU, the target's and the host's."""
    parts = [(label, label, values) for label, values in res.worker_cpu.items()]
    if "cpu" in res.target:
        parts.append(("target", "target.cpu", res.target["cpu"]))
    if "cpu" in res.host:
        parts.append(("host (% of all cores)", "host.cpu", res.host["cpu"]))
    series = [
        _resource(out, res, label, key, values, _color(index))
        for index, (label, key, values) in enumerate(parts)
    ]
    axis = Axis("pct", "% of one core")
    return Chart("CPU: generator workers, target, host", x, axis, series)


def target(out: ChartSet, res: Resources, x: Axis) -> Chart:
    """The target's CPU and its memory (RSS), each on its own axis."""
    series = []
    if "cpu" in res.target:
        series.append(_resource(out, res, "CPU", "target.cpu", res.target["cpu"], PALETTE[0]))
    rss = res.target["rss"]
    series.append(_resource(out, res, "memory (RSS)", "target.rss", rss, PALETTE[1], axis=2))
    y, y2 = Axis("pct", "CPU, % of one core"), Axis("bytes", "memory (RSS)", zero=False)
    return Chart("target: CPU and memory", x, y, series, y2=y2)


def fds(out: ChartSet, res: Resources, x: Axis) -> Chart:
    series = [_resource(out, res, "open fds", "target.fds", res.target["fds"], PALETTE[0])]
    return Chart("target: open file descriptors", x, Axis("count", "open fds", zero=False), series)


def host_memory(out: ChartSet, res: Resources, x: Axis) -> Chart:
    used = res.host["mem_used"]
    series = [_resource(out, res, "used", "host.mem_used", used, PALETTE[0])]
    return Chart("host: memory used", x, Axis("bytes", "memory", zero=False), series)


def overlay(
    out: ChartSet,
    title: str,
    column: str,
    runs: Sequence[tuple[str, str]],
    x: Axis,
    y: Axis,
) -> Chart:
    """One column of several runs on one time chart, a line per ``(label, key)``."""
    series = [
        Series(label, f"{key}.t", f"{key}.{column}", PALETTE[index % len(PALETTE)], width=2.0)
        for index, (label, key) in enumerate(runs)
        if f"{key}.{column}" in out.columns
    ]
    return Chart(title, x, y, series)
