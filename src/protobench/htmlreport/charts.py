"""Bokeh figures of a :class:`~protobench.htmlreport.view.RunView`'s series.

Every time chart of a page shares one x range (zooming one zooms all) and
carries the run's marks: phases and pauses as shaded spans, rate changes and
other notices as vertical lines. One operation's time charts share one data
source, so its columns are written once; arrays are float32 (NaN where an
interval has no latency) to keep the page small. The percentile spectrum puts
``1 / (1 - p)`` on a log axis labelled 0%, 90%, 99%, ... 99.999%.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import BoxAnnotation, Label, Span
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from protobench.htmlreport.view import (
    PERCENTILES,
    SPECTRUM_NINES,
    Mark,
    OpSeries,
    Resources,
    Spectrum,
)
from protobench.vocab.thresholds import LATENCY_COLUMNS

HEIGHT = 240
TOOLS = "xpan,xwheel_zoom,box_zoom,reset,save"
PERCENTILE_LABELS = dict(LATENCY_COLUMNS)
MARK_FILL = {"phase": ("#888888", 0.08), "pause": ("#ff9900", 0.18)}
"""Shaded spans: warmup and drain (sustain is left clear), pauses."""
MIB = 1024 * 1024


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float32)


def time_range(ops: Sequence[OpSeries], marks: Sequence[Mark]) -> Range1d:
    """The x range every time chart shares: from the run's start to its last interval."""
    ends = [t for op in ops for t in op.t[-1:]] + [m.end or m.start for m in marks]
    return Range1d(start=0.0, end=max(ends, default=1.0))


def op_source(op: OpSeries) -> ColumnDataSource:
    """One source with all of an operation's per-interval columns."""
    data: dict[str, np.ndarray] = {
        "t": _array(op.t),
        "ok": _array(op.ok_rate),
        "errors": _array(op.error_rate),
    }
    data.update({p: _array(op.latency[p]) for p in PERCENTILES})
    data.update({f"error {k}": _array(v) for k, v in op.errors.items()})
    data.update({f"counter {k}": _array(v) for k, v in op.counters.items()})
    return ColumnDataSource(data)


def _figure(title: str, x_range: Range1d, y_label: str, y_log: bool = False) -> figure:
    fig = figure(
        title=title,
        height=HEIGHT,
        sizing_mode="stretch_width",
        x_range=x_range,
        tools=TOOLS,
        y_axis_type="log" if y_log else "linear",
        x_axis_label="seconds since start",
        y_axis_label=y_label,
        output_backend="canvas",
    )
    fig.toolbar.logo = None
    return fig


def _finish(fig: figure, marks: Sequence[Mark], tooltips: list[tuple[str, str]]) -> figure:
    for mark in marks:
        if mark.end is not None and mark.kind in MARK_FILL:
            if mark.kind == "phase" and mark.label == "sustain":
                continue
            color, alpha = MARK_FILL[mark.kind]
            fig.add_layout(
                BoxAnnotation(left=mark.start, right=mark.end, fill_color=color, fill_alpha=alpha)
            )
            fig.add_layout(
                Label(x=mark.start, y=4, y_units="screen", text=mark.label, text_font_size="9pt")
            )
        else:
            color = "#1f77b4" if mark.kind == "rate" else "#d62728"
            fig.add_layout(
                Span(location=mark.start, dimension="height", line_color=color, line_dash="dashed")
            )
            fig.add_layout(
                Label(x=mark.start, y=4, y_units="screen", text=mark.label, text_font_size="9pt")
            )
    fig.add_tools(HoverTool(tooltips=[("t", "@t{0.0} s"), *tooltips], mode="vline"))
    if fig.legend:
        fig.legend.click_policy = "hide"
        fig.legend.location = "top_left"
        fig.legend.background_fill_alpha = 0.6
    return fig


def throughput(
    op: OpSeries, source: ColumnDataSource, x_range: Range1d, marks: Sequence[Mark]
) -> figure:
    fig = _figure(f"{op.name}: throughput", x_range, "per second")
    fig.line("t", "ok", source=source, color="#2ca02c", legend_label="ok/s", line_width=1.5)
    fig.line("t", "errors", source=source, color="#d62728", legend_label="errors/s")
    return _finish(fig, marks, [("ok/s", "@ok{0,0.0}"), ("errors/s", "@errors{0,0.0}")])


def latency(
    op: OpSeries, source: ColumnDataSource, x_range: Range1d, marks: Sequence[Mark]
) -> figure:
    fig = _figure(f"{op.name}: latency per interval", x_range, "µs", y_log=True)
    for color, p in zip(Category10_10, PERCENTILES, strict=False):
        fig.line("t", p, source=source, color=color, legend_label=PERCENTILE_LABELS[p])
    tips = [(PERCENTILE_LABELS[p], f"@{p}{{0,0}} µs") for p in PERCENTILES]
    return _finish(fig, marks, tips)


def keyed(
    title: str,
    prefix: str,
    keys: Sequence[str],
    source: ColumnDataSource,
    x_range: Range1d,
    marks: Sequence[Mark],
) -> figure:
    """Lines of the per-second columns ``{prefix} {key}`` (error classes and codes, counters)."""
    fig = _figure(title, x_range, "per second")
    tips = []
    for index, key in enumerate(keys):
        column = f"{prefix} {key}"
        color = Category10_10[index % len(Category10_10)]
        dash = "dashed" if ":" in key else "solid"
        fig.line("t", column, source=source, color=color, legend_label=key, line_dash=dash)
        tips.append((key, f"@{{{column}}}{{0,0.0}}"))
    return _finish(fig, marks, tips)


def spectrum(title: str, series: Sequence[tuple[str, list[tuple[float, float]]]]) -> figure:
    """Latency by percentile, HdrHistogram style: one line per ``(label, points)``."""
    fig = figure(
        title=title,
        height=HEIGHT + 40,
        sizing_mode="stretch_width",
        x_axis_type="log",
        tools="pan,wheel_zoom,box_zoom,reset,save",
        x_axis_label="percentile",
        y_axis_label="µs",
        output_backend="canvas",
    )
    fig.toolbar.logo = None
    for index, (label, points) in enumerate(series):
        source = ColumnDataSource(
            {
                "x": np.array([1.0 / (1.0 - p / 100.0) for p, _ in points], dtype=np.float32),
                "p": np.array([p for p, _ in points], dtype=np.float32),
                "us": np.array([v for _, v in points], dtype=np.float32),
            }
        )
        color = Category10_10[index % len(Category10_10)]
        fig.line("x", "us", source=source, color=color, legend_label=label, line_width=1.5)
    ticks = [10.0**k for k in range(SPECTRUM_NINES + 1)]
    fig.xaxis.ticker = ticks
    labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
    fig.xaxis.major_label_overrides = dict(zip(ticks, labels, strict=True))
    fig.add_tools(HoverTool(tooltips=[("percentile", "@p{0.000}%"), ("latency", "@us{0,0} µs")]))
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    return fig


def run_spectrum(item: Spectrum) -> figure:
    """One op's sustain spectrum; uncorrected beside corrected in the open model."""
    series = [("corrected" if item.uncorrected is not None else "latency", item.corrected)]
    if item.uncorrected is not None:
        series.append(("uncorrected", item.uncorrected))
    return spectrum(f"{item.name}: percentile spectrum (sustain)", series)


def overlay(
    title: str,
    y_label: str,
    column: str,
    runs: Sequence[tuple[str, ColumnDataSource]],
    x_range: Range1d,
    y_log: bool = False,
) -> figure:
    """One column of several runs' sources on one time chart, a line per ``(label, source)``."""
    fig = _figure(title, x_range, y_label, y_log)
    for index, (label, source) in enumerate(runs):
        color = Category10_10[index % len(Category10_10)]
        fig.line(
            "t", column, source=source, color=color, legend_label=label, line_width=1.5, name=label
        )
    return _finish(fig, [], [("run", "$name"), (y_label, f"@{{{column}}}{{0,0.0}}")])


def cpu(res: Resources, x_range: Range1d, marks: Sequence[Mark]) -> figure:
    """Each worker's CPU, the target's and the host's, in % of one core (host: of all)."""
    fig = _figure("CPU", x_range, "% of one core (host: % of all cores)")
    columns: dict[str, list[float | None]] = dict(res.worker_cpu)
    if "cpu" in res.target:
        columns["target"] = res.target["cpu"]
    if "cpu" in res.host:
        columns["host"] = res.host["cpu"]
    return _resource_lines(fig, res.t, columns, marks, 1.0, "%")


def memory(res: Resources, x_range: Range1d, marks: Sequence[Mark]) -> figure:
    fig = _figure("memory", x_range, "MiB")
    columns = {}
    if "rss" in res.target:
        columns["target rss"] = res.target["rss"]
    if "mem_used" in res.host:
        columns["host used"] = res.host["mem_used"]
    return _resource_lines(fig, res.t, columns, marks, 1.0 / MIB, "MiB")


def fds(res: Resources, x_range: Range1d, marks: Sequence[Mark]) -> figure:
    fig = _figure("target file descriptors", x_range, "open fds")
    return _resource_lines(fig, res.t, {"target fds": res.target["fds"]}, marks, 1.0, "")


def _resource_lines(
    fig: figure,
    t: Sequence[float],
    columns: dict[str, list[float | None]],
    marks: Sequence[Mark],
    scale: float,
    unit: str,
) -> figure:
    data = {"t": _array(t)}
    for index, values in enumerate(columns.values()):
        data[f"c{index}"] = _array(values) * np.float32(scale)
    source = ColumnDataSource(data)
    tips = []
    for index, label in enumerate(columns):
        color = Category10_10[index % len(Category10_10)]
        tips.append((label, f"@c{index}{{0,0.0}} {unit}"))
        fig.line("t", f"c{index}", source=source, color=color, legend_label=label)
    return _finish(fig, marks, tips)
