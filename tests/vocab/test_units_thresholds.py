"""Units of profiles and flags, and threshold expressions."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from protobench.engine.summaries import EMPTY_OP, LatencySummary, OpSummary, PhaseSummary
from protobench.engine.thresholds import judge
from protobench.vocab.thresholds import parse_threshold
from protobench.vocab.units import (
    format_size,
    parse_duration,
    parse_fraction,
    parse_rate,
    parse_size,
)


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


@pytest.mark.parametrize(
    ("text", "size"),
    [
        (200, 200),
        ("200B", 200),
        ("1k", 1000),
        ("64KiB", 65536),
        ("64 kib", 65536),
        ("16MiB", 16 << 20),
        ("10MB", 10_000_000),
        ("1GiB", 1 << 30),
    ],
)
def test_sizes(text: str | int, size: int) -> None:
    assert parse_size(text, 1 << 40) == size


@pytest.mark.parametrize("text", ["1.5k", "5 TB", "-1", "big", True, 2.0])
def test_bad_sizes_say_what_was_expected(text: object) -> None:
    with pytest.raises(ValueError, match="expected a size"):
        parse_size(text, 1 << 40)
    with pytest.raises(ValueError, match=r"at most 1024 B \(1 KiB\), got 1025"):
        parse_size("1025", 1024)


def test_sizes_are_printed_in_their_largest_binary_unit() -> None:
    assert [format_size(n) for n in (100, 65536, 64 << 20, 1 << 30, 1536)] == [
        "100 B",
        "64 KiB",
        "64 MiB",
        "1 GiB",
        "1.5 KiB",
    ]


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
