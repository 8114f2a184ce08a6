"""Threshold expressions: parsing (at load time) and evaluation against a phase's figures.

Grammar: ``METRIC[op] CMP VALUE`` where ``[op]`` is optional (default: the
total over all operations). Metrics: ``error_rate`` (a fraction, ``0.5%``),
``throughput`` (per second, ``1000/s``), latency ``p50 p90 p95 p99 p999 max mean``
(a duration, ``5ms``), ``late`` (a fraction of scheduled slots), ``down`` (the
share of the sessions' time spent without a connection, a fraction), ``ok`` and
``errors`` (counts) and ``counters.NAME`` (a plugin counter such as ``lost``, a
count). :func:`format_value` prints an observed value in its metric's unit.
Comparators: ``< <= > >= ==``. Examples: ``error_rate < 0.5%``, ``p99 < 5ms``,
``p99[read-property] <= 2ms``, ``throughput > 1000/s``,
``counters.lost[subscribe] == 0``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from protobench.engine.report_model import ThresholdResult
from protobench.engine.summaries import OpSummary, PhaseSummary
from protobench.profiles.units import format_duration, parse_duration, parse_fraction, parse_rate

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
LATENCY_METRICS = ("p50", "p90", "p95", "p99", "p999", "max", "mean")
LATENCY_COLUMNS = (
    ("p50", "p50"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("p999", "p99.9"),
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


def judge(threshold: Threshold, sustain: PhaseSummary | None) -> tuple[float | None, bool]:
    """(observed value, passed) of ``threshold`` on the sustain phase (``None``: not measured)."""
    scope = sustain.scope(threshold.op) if sustain is not None else None
    value = _observe(scope, threshold.metric) if scope is not None else _unmeasured(threshold)
    if value is None:
        return None, False
    return value, _COMPARATORS[threshold.comparator](value, threshold.limit)


def _unmeasured(threshold: Threshold) -> float | None:
    """What a metric reads as without figures: a count of late arrivals or of a counter is 0."""
    metric = threshold.metric
    return 0.0 if metric == "late" or metric.startswith("counters.") else None


def _observe(scope: OpSummary, metric: str) -> float | None:
    if metric in LATENCY_METRICS:
        return scope.latency_us.value(metric)
    if metric.startswith("counters."):
        return float(scope.counters.get(metric.removeprefix("counters."), 0))
    if metric == "late":
        return scope.late / scope.attempts if scope.attempts else 0.0
    if metric == "down":
        return None if scope.down_share is None else float(scope.down_share)
    if metric in SCOPE_METRICS:
        return float(getattr(scope, metric))
    return None


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


def observed(expr: str, value: float | None) -> str:
    """A threshold result's observed value in its unit, from its expression."""
    try:
        metric = parse_threshold(expr).metric
    except ValueError:
        metric = ""
    return format_value(metric, value)


def evaluate_all(
    thresholds: Sequence[Threshold], sustain: PhaseSummary | None
) -> list[ThresholdResult]:
    """The report's ``thresholds``: each expression, its observed value and whether it held."""
    results = []
    for threshold in thresholds:
        value, ok = judge(threshold, sustain)
        results.append(ThresholdResult(expr=threshold.expr, value=value, ok=ok))
    return results
