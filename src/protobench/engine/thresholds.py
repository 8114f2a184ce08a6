"""Threshold evaluation against a report (the grammar is :mod:`protobench.vocab.thresholds`).

A threshold is judged on the sustain phase: the total over all operations, or
one operation's figures when it names one (``p99[get] < 5ms``). A counter
(``counters.NAME``) adds the drain's: the drain completes the sustained
window's accounting (an MQTT subscriber counts the messages it never received,
``undelivered``, when the drain ends).
"""

from __future__ import annotations

from collections.abc import Sequence

from protobench.engine.report_model import ThresholdResult
from protobench.engine.summaries import OpSummary, PhaseSummary
from protobench.vocab.thresholds import LATENCY_METRICS, SCOPE_METRICS, Threshold


def judge(
    threshold: Threshold, sustain: PhaseSummary | None, drain: PhaseSummary | None = None
) -> tuple[float | None, bool]:
    """(observed value, passed) of ``threshold`` on the sustain phase (``None``: not measured);
    a counter adds the drain's."""
    scope = sustain.scope(threshold.op) if sustain is not None else None
    value = _observe(scope, threshold.metric) if scope is not None else _unmeasured(threshold)
    if value is None:
        return None, False
    if threshold.metric.startswith("counters.") and drain is not None:
        tail = drain.scope(threshold.op)
        if tail is not None:
            value += tail.counters.get(threshold.metric.removeprefix("counters."), 0)
    return value, threshold.holds(value)


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
        return scope.late_share
    if metric == "down":
        return None if scope.down_share is None else float(scope.down_share)
    if metric in SCOPE_METRICS:
        return float(getattr(scope, metric))
    return None


def evaluate_all(
    thresholds: Sequence[Threshold],
    sustain: PhaseSummary | None,
    drain: PhaseSummary | None = None,
) -> list[ThresholdResult]:
    """The report's ``thresholds``: each expression, its observed value and whether it held."""
    results = []
    for threshold in thresholds:
        value, ok = judge(threshold, sustain, drain)
        results.append(ThresholdResult(expr=threshold.expr, value=value, ok=ok))
    return results
