"""The percentile list is declared once (``vocab.percentiles``); the report's fields follow it."""

from __future__ import annotations

import dataclasses

from protobench.engine.metrics import new_histogram, summary
from protobench.engine.summaries import LatencySummary
from protobench.vocab.percentiles import PERCENTILE_KEYS, PERCENTILE_LABELS, Percentile


def test_a_percentile_has_a_key_without_a_dot_and_a_label_with_it() -> None:
    assert Percentile(99.9).key == "p999"
    assert Percentile(99.9).label == "p99.9"
    assert Percentile(50.0).key == Percentile(50.0).label == "p50"
    assert PERCENTILE_KEYS == ("p50", "p90", "p95", "p99", "p999")
    assert PERCENTILE_LABELS["p999"] == "p99.9"


def test_the_report_latency_fields_are_the_percentiles_in_order() -> None:
    names = [f.name for f in dataclasses.fields(LatencySummary)]
    assert names[names.index("count") + 1 : names.index("min")] == list(PERCENTILE_KEYS)


def test_a_histogram_summary_has_every_percentile() -> None:
    hist = new_histogram()
    for value in range(1, 1001):
        hist.record_value(value)
    figures = summary(hist)
    assert [key for key in figures if key in PERCENTILE_KEYS] == list(PERCENTILE_KEYS)
    assert figures["p50"] <= figures["p999"] <= figures["max"]
