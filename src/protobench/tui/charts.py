"""What each chart of the monitor draws: its lines (labels, values, colours) and its title.

Pure functions of a :class:`~protobench.tui.display.Display`, one per chart:
throughput and errors/s (:func:`throughput_chart`), latency over time
(:func:`latency_chart`), errors per second by code (:func:`error_code_chart`)
and CPU (:func:`cpu_chart`). What the user chose decides the scope, the same
way for every chart: a focused op is shown alone (with its own baseline); a
filter shows the ops it lets through and no total, so the scale fits them;
else every op and the total.

The ops' colours (:data:`OP_STYLES`) start with the Okabe-Ito and Paul Tol
palettes, ordered so that the first ones stay apart for colour-blind viewers
(protanopia, deuteranopia, tritanopia) and on a 256-colour terminal, and all of
them stay visible on a dark background; red is the errors' line, grey the
baseline, white the total (a test measures the distances).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.vocab.percentiles import PERCENTILES

OP_STYLES = (
    "#56b4e9",
    "#f0e442",
    "#ffaabb",
    "#99ddff",
    "#cc79a7",
    "#e69f00",
    "#009e73",
    "#44bb99",
    "#ddcc77",
    "#bbcc33",
)
"""One colour per op (sky blue, yellow, pink, light cyan, reddish purple, orange, bluish
green, mint, sand, pear); hex colours, so the terminal's theme does not remap them."""
ERROR_STYLE = "bold #ff3030"
BASELINE_STYLE = "#7f7f7f"
TOTAL_STYLE = "bold #ffffff"
LATENCY_STYLES = {"p50": "#56b4e9", "p99": "#e69f00", "p999": "#cc79a7"}
"""The latency chart's percentiles (the ops' first colours)."""
LABELS = {p.key: p.label for p in PERCENTILES}
CODE_LINES = 5
"""Error codes drawn over time (the most frequent of the run, or of the focused op)."""


@dataclass(frozen=True)
class Series:
    """One line: its legend label, values (one per point, oldest first; NaN: no dot), colour."""

    label: str
    values: tuple[float, ...]
    style: str


@dataclass(frozen=True)
class Chart:
    """The lines of a chart and its title (what it shows, and what scope)."""

    title: str
    series: list[Series]


def op_style(display: Display, op: str) -> str:
    """The colour of ``op``: by its place among the run's ops (the same in every chart)."""
    ops = display.view.info.ops if display.view.info is not None else ()
    return OP_STYLES[ops.index(op) % len(OP_STYLES)] if op in ops else OP_STYLES[0]


def shown_ops(display: Display) -> list[str]:
    """The ops the focus or the filter lets through, in the run's order."""
    return [name for name in display.view.throughput if name != "total" and display.shows(name)]


def scope_note(display: Display) -> str:
    """`` · get`` with an op focused, `` · filter /re/: 2 of 7 ops`` with a filter."""
    if display.focus is not None:
        return f" · {display.focus}"
    if display.filter:
        ops = [name for name in display.view.throughput if name != "total"]
        return f" · filter /{display.filter}/: {len(shown_ops(display))} of {len(ops)} ops"
    return ""


def _summed(lines: list[tuple[float, ...]]) -> tuple[float, ...]:
    length = min((len(line) for line in lines), default=0)
    return tuple(sum(line[i - length] for line in lines) for i in range(length))


def throughput_chart(display: Display) -> Chart:
    """Errors/s (red), the baseline (grey), each op shown and the total (white).

    Errors come first so the ops' lines are drawn over them. With an op
    focused: its errors/s, its baseline and its line; with a filter: the
    errors/s of the ops shown, their baselines summed, their lines, no total.
    """
    view, baseline = display.view, display.baseline
    ops = shown_ops(display)
    scoped = display.focus is not None or bool(display.filter)
    errors = (
        _summed([view.errors_per_second.get(op, ()) for op in ops])
        if scoped
        else view.errors_per_second.get("total", ())
    )
    series = [Series("errors", errors, ERROR_STYLE)]
    if baseline is not None:
        scopes = ops if scoped else ["total"]
        curves = [baseline.curve_at(view.times, "throughput", scope) for scope in scopes]
        series.append(Series("baseline", _summed(curves), BASELINE_STYLE))
    series.extend(Series(op, view.throughput[op], op_style(display, op)) for op in ops)
    if not scoped and len(ops) > 1 and "total" in view.throughput:
        series.append(Series("total", view.throughput["total"], TOTAL_STYLE))
    return Chart(f"throughput · ops/s and errors/s{scope_note(display)}", series)


def latency_chart(display: Display, *, tail: bool = True) -> Chart:
    """Latency per point: p50, p99 (and p99.9 with ``tail``) of the total or the focused op,
    the baseline's p99 faint; with a filter (or ops of different kinds): each op's p99.

    Corrected or uncorrected figures follow the display's toggle (``t``).
    """
    view, baseline, suffix = display.view, display.baseline, display.latency_key
    mode = ""
    if view.info is not None and view.info.open_model:
        mode = " · uncorrected" if suffix else " · corrected"
    history = view.latency_history
    scope = display.focus if display.focus is not None else "total"
    values = history.get(scope, {})
    single = display.focus is not None or (
        not display.filter and any(not math.isnan(v) for v in values.get("p99", ()))
    )
    if not single:
        series = [
            Series(f"{op} p99", history.get(op, {}).get("p99" + suffix, ()), op_style(display, op))
            for op in shown_ops(display)
        ]
        return Chart(f"latency over time · p99 per op{mode}{scope_note(display)}", series)
    series = []
    if baseline is not None:
        curve = baseline.curve_at(view.times, "p99" + suffix, scope)
        series.append(Series("baseline p99", curve, BASELINE_STYLE))
    keys = ("p50", "p99", "p999") if tail else ("p50", "p99")
    series.extend(
        Series(LABELS[key], values.get(key + suffix, ()), LATENCY_STYLES[key]) for key in keys
    )
    name = "total" if display.focus is None else display.focus
    return Chart(f"latency over time · {name}{mode}", series)


def error_code_chart(display: Display) -> Chart:
    """Errors per second of the most frequent codes (of the run, or of the focused op)."""
    scope = display.focus if display.focus is not None else "total"
    lines = display.view.error_code_history.get(scope, {})
    ranked = sorted(lines, key=lambda code: -sum(v for v in lines[code] if not math.isnan(v)))
    series = [
        Series(code, lines[code], OP_STYLES[number % len(OP_STYLES)])
        for number, code in enumerate(ranked[:CODE_LINES])
    ]
    where = f" · {display.focus}" if display.focus is not None else ""
    return Chart(f"errors/s by code{where}", series)


def cpu_chart(display: Display) -> Chart:
    history = display.view.cpu_history
    return Chart(
        "cpu over time · % of one core (host: of all)",
        [
            Series("host", history.get("host", ()), "grey62"),
            Series("target", history.get("target", ()), "yellow"),
            Series("busiest worker", history.get("generator", ()), "cyan"),
        ],
    )


def ops_per_second(value: float) -> str:
    return f"{formatting.rate(value)}/s"


def percent(value: float) -> str:
    return f"{value:.0f}%"


def latency_tick(value: float) -> str:
    return formatting.latency(value)
