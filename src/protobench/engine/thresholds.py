"""Threshold evaluation against a report (the grammar is :mod:`protobench.vocab.thresholds`).

A threshold is judged on the sustain phase: the total over all operations, or
one operation's figures when it names one (``p99[get] < 5ms``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protobench.vocab.thresholds import LATENCY_METRICS, Threshold


def evaluate(threshold: Threshold, report: Mapping[str, Any]) -> tuple[float | None, bool]:
    """(observed value, passed) of ``threshold`` against ``report['phases']['sustain']``."""
    sustain = report.get("phases", {}).get("sustain", {})
    scope = (
        sustain.get("ops", {}).get(threshold.op, {}) if threshold.op else sustain.get("total", {})
    )
    value = _observe(scope, threshold.metric)
    if value is None:
        return None, False
    return value, threshold.holds(value)


def _observe(scope: Mapping[str, Any], metric: str) -> float | None:
    if metric in LATENCY_METRICS:
        latency = scope.get("latency_us", {})
        return float(latency[metric]) if metric in latency else None
    if metric.startswith("counters."):
        return float(scope.get("counters", {}).get(metric.removeprefix("counters."), 0))
    if metric == "late":
        scheduled = scope.get("ok", 0) + scope.get("errors", 0)
        return scope.get("late", 0) / scheduled if scheduled else 0.0
    if metric == "down":
        return float(scope["down_share"]) if "down_share" in scope else None
    if metric in scope:
        return float(scope[metric])
    return None


def evaluate_all(thresholds: list[Threshold], report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's ``thresholds`` list: expr, observed value, ok."""
    results = []
    for threshold in thresholds:
        value, ok = evaluate(threshold, report)
        results.append({"expr": threshold.expr, "value": value, "ok": ok})
    return results
