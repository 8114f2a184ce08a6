"""Units of profiles and flags, and threshold expressions."""

from __future__ import annotations

import pytest

from protobench.engine.thresholds import evaluate
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


def test_threshold_parsing_and_evaluation() -> None:
    report = {
        "phases": {
            "sustain": {
                "total": {"error_rate": 0.001, "throughput": 900.0, "latency_us": {"p99": 4000}},
                "ops": {"get": {"error_rate": 0.02, "latency_us": {"p99": 6000}}},
            }
        }
    }
    assert evaluate(parse_threshold("p99 < 5ms"), report) == (4000.0, True)
    assert evaluate(parse_threshold("p99[get] < 5ms"), report) == (6000.0, False)
    assert evaluate(parse_threshold("error_rate<0.5%"), report) == (0.001, True)
    assert evaluate(parse_threshold("throughput >= 1000/s"), report) == (900.0, False)


@pytest.mark.parametrize("expr", ["p98 < 5ms", "p99 5ms", "throughput > fast"])
def test_bad_thresholds(expr: str) -> None:
    with pytest.raises(ValueError, match=r"expected|unknown"):
        parse_threshold(expr)


def test_thresholds_on_counters_and_error_counts() -> None:
    report = {
        "phases": {
            "sustain": {
                "total": {"errors": 3, "counters": {"lost": 0}},
                "ops": {"sub": {"errors": 0, "counters": {"lost": 2, "received": 10}}},
            }
        }
    }
    assert evaluate(parse_threshold("counters.lost == 0"), report) == (0.0, True)
    assert evaluate(parse_threshold("counters.lost[sub] == 0"), report) == (2.0, False)
    assert evaluate(parse_threshold("counters.received[sub] >= 10"), report) == (10.0, True)
    assert evaluate(parse_threshold("errors < 1"), report) == (3.0, False)
    with pytest.raises(ValueError, match="expected a number"):
        parse_threshold("counters.lost == none")
