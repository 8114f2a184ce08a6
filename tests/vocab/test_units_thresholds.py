"""Units of profiles and flags, and threshold expressions."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from protobench.engine.summaries import EMPTY_OP, LatencySummary, OpSummary, PhaseSummary
from protobench.engine.thresholds import judge
from protobench.vocab.thresholds import parse_threshold
from protobench.vocab.units import parse_duration, parse_fraction, parse_rate


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), ("250us", 250e-6), (3, 3.0)],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["30", "5 sec", "-1s", "fast", ""])
def test_bad_durations_say_what_was_expected(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_duration(text)


def test_rates_and_fractions() -> None:
    assert parse_rate("5000/s") == 5000.0
    assert parse_rate("300/m") == pytest.approx(5.0)
    assert parse_rate(20) == 20.0
    assert parse_fraction("0.5%") == pytest.approx(0.005)
    with pytest.raises(ValueError, match="rate"):
        parse_rate("0/s")


def _op(**figures: Any) -> OpSummary:
    """An op's figures: nothing done, but for ``figures``."""
    return dataclasses.replace(EMPTY_OP, **figures)


def test_threshold_parsing_and_evaluation() -> None:
    sustain = PhaseSummary(
        duration_s=1.0,
        total=_op(error_rate=0.001, throughput=900.0, latency_us=LatencySummary(p99=4000)),
        ops={"get": _op(error_rate=0.02, latency_us=LatencySummary(p99=6000))},
    )
    assert judge(parse_threshold("p99 < 5ms"), sustain) == (4000.0, True)
    assert judge(parse_threshold("p99[get] < 5ms"), sustain) == (6000.0, False)
    assert judge(parse_threshold("error_rate<0.5%"), sustain) == (0.001, True)
    assert judge(parse_threshold("throughput >= 1000/s"), sustain) == (900.0, False)


@pytest.mark.parametrize("expr", ["p98 < 5ms", "p99 5ms", "throughput > fast"])
def test_bad_thresholds(expr: str) -> None:
    with pytest.raises(ValueError, match=r"expected|unknown"):
        parse_threshold(expr)


def test_thresholds_on_counters_and_error_counts() -> None:
    sustain = PhaseSummary(
        duration_s=1.0,
        total=_op(errors=3, counters={"lost": 0}),
        ops={"sub": _op(errors=0, counters={"lost": 2, "received": 10})},
    )
    assert judge(parse_threshold("counters.lost == 0"), sustain) == (0.0, True)
    assert judge(parse_threshold("counters.lost[sub] == 0"), sustain) == (2.0, False)
    assert judge(parse_threshold("counters.received[sub] >= 10"), sustain) == (10.0, True)
    assert judge(parse_threshold("errors < 1"), sustain) == (3.0, False)
    with pytest.raises(ValueError, match="expected a number"):
        parse_threshold("counters.lost == none")
