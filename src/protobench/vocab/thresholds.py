"""The threshold grammar: parsing (at load time) and printing values in a metric's unit.

Grammar: ``METRIC[op] CMP VALUE`` where ``[op]`` is optional (default: the
total over all operations). Metrics: ``error_rate`` (a fraction, ``0.5%``),
``throughput`` (per second, ``1000/s``), latency ``p50 p90 p95 p99 p999 max mean``
(a duration, ``5ms``), ``late`` (a fraction of scheduled slots), ``down`` (the
share of the sessions' time spent without a connection, a fraction), ``ok`` and
``errors`` (counts) and ``counters.NAME`` (a plugin counter such as ``lost``, a
count). :func:`format_value` prints an observed value in its metric's unit (:func:`format_change`
a change between two runs).
Comparators: ``< <= > >= ==``. Examples: ``error_rate < 0.5%``,
``p99 < 5ms``, ``p99[read-property] <= 2ms``, ``throughput > 1000/s``,
``counters.lost[subscribe] == 0``. Evaluating a threshold against a report is the
engine's (:mod:`protobench.engine.thresholds`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from protobench.vocab.percentiles import PERCENTILE_KEYS, PERCENTILES
from protobench.vocab.units import format_duration, parse_duration, parse_fraction, parse_rate

_EXPR = re.compile(
    r"^\s*([a-z_0-9]+(?:\.[A-Za-z_0-9-]+)?)\s*(?:\[\s*([^\]]+?)\s*\])?\s*(<=|>=|==|<|>)\s*(.+?)\s*$"
)
_COMPARATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
LATENCY_METRICS = (*PERCENTILE_KEYS, "max", "mean")
LATENCY_COLUMNS: tuple[tuple[str, str], ...] = (
    *((p.key, p.label) for p in PERCENTILES),
    ("max", "max"),
)
"""The latency columns every table shows (summary, monitor): report key and heading."""
FRACTION_METRICS = ("error_rate", "late", "down")
COUNT_METRICS = ("errors", "ok")
SCOPE_METRICS = ("error_rate", "throughput", *COUNT_METRICS)
"""The metrics read as they are from an op's (or the total's) figures."""


@dataclass(frozen=True)
class Threshold:
    """A parsed threshold; ``limit`` is in the report's units (µs, /s, fraction)."""

    expr: str
    metric: str
    op: str | None
    comparator: str
    limit: float

    def holds(self, value: float) -> bool:
        """Whether an observed ``value`` (in the report's units) meets the threshold."""
        return _COMPARATORS[self.comparator](value, self.limit)


def parse_threshold(expr: str) -> Threshold:
    """Parse one threshold expression; ``ValueError`` says what was expected."""
    match = _EXPR.match(expr)
    if not match:
        raise ValueError(
            f"expected a threshold like 'p99 < 5ms' or 'error_rate < 0.5%', got {expr!r}"
        )
    metric, op, comparator, raw = match.groups()
    if metric in LATENCY_METRICS:
        limit = parse_duration(raw) * 1e6
    elif metric in FRACTION_METRICS:
        limit = parse_fraction(raw)
    elif metric == "throughput":
        limit = parse_rate(raw)
    elif metric in COUNT_METRICS or metric.startswith("counters."):
        try:
            limit = float(raw)
        except ValueError:
            raise ValueError(f"expected a number for {metric}, got {raw!r}") from None
    else:
        known = ", ".join(
            (
                *FRACTION_METRICS,
                "throughput",
                *COUNT_METRICS,
                "counters.NAME",
                *LATENCY_METRICS,
            )
        )
        raise ValueError(f"unknown threshold metric {metric!r} (expected one of {known})")
    return Threshold(expr.strip(), metric, op, comparator, limit)


def format_value(metric: str, value: float | None) -> str:
    """An observed (or limit) value in its metric's unit: ``6.01ms``, ``0.25%``, ``980/s``."""
    if value is None:
        return "absent"
    if metric in LATENCY_METRICS:
        return format_duration(value / 1e6)
    if metric in FRACTION_METRICS:
        return f"{value:.2%}"
    if metric == "throughput":
        return f"{value:,.1f}/s"
    return f"{value:g}"


def format_change(metric: str, change: float | None) -> str:
    """A change ``diff`` found: relative (``+12.34%``), or for the error rate a difference
    of rates in percentage points (``+0.50pp``); ``?`` when there is none."""
    if change is None:
        return "?"
    if metric == "error_rate":
        return f"{change * 100:+.2f}pp"
    return f"{change:+.2%}"


def observed(expr: str, value: float | None) -> str:
    """A threshold result's observed value in its unit, from its expression."""
    try:
        metric = parse_threshold(expr).metric
    except ValueError:
        metric = ""
    return format_value(metric, value)
