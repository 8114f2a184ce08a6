"""A long run's interval series stays bounded, and its merged records stay exact."""

from __future__ import annotations

from typing import Any

from protobench.engine.aggregate import Aggregator
from protobench.engine.metrics import OpRecorder, decode, merge
from protobench.vocab.errors import ErrorClass, OpError


def _frame(index: int, latencies_us: list[int], errors: int) -> dict[str, Any]:
    recorder = OpRecorder("get")
    recorder.latencies.extend(us * 1000 for us in latencies_us)
    for _ in range(errors):
        recorder.error(OpError(ErrorClass.TIMEOUT, "slow"))
    recorder.count("retries", 2)
    return {
        "phase": "sustain",
        "index": index,
        "t0": float(index),
        "t1": float(index + 1),
        "worker": 0,
        "ops": {"get": recorder.flush().to_wire()},
    }


def test_series_keeps_a_bounded_number_of_exact_records() -> None:
    aggregator = Aggregator(["get"], corrected=False, phase_offsets={"sustain": 0.0})
    aggregator.live = {0}
    aggregator.series_limit = 8
    intervals = 40
    for index in range(intervals):
        aggregator.add(_frame(index, [100 + index] * (index + 1), errors=index % 3))
    aggregator.finish()
    series = aggregator.series
    assert len(series) == 8
    durations = [record.duration for record in series]
    assert sum(durations) == intervals
    assert durations[-1] == 1.0  # the newest interval stays at full resolution
    assert durations == sorted(durations, reverse=True)  # older stretches are coarser
    assert [record.elapsed for record in series] == sorted(r.elapsed for r in series)
    assert series[-1].elapsed == intervals
    ops = [record.ops["get"] for record in series]
    assert sum(op.ok for op in ops) == sum(range(1, intervals + 1))
    assert sum(op.errors for op in ops) == sum(i % 3 for i in range(intervals))
    assert sum(op.counters["retries"] for op in ops) == 2 * intervals
    first = series[0]
    assert first.ops["get"].throughput == round(first.ops["get"].ok / first.duration, 3)
    merged = merge([op.hist or "" for op in ops])
    whole = decode(aggregator.phase_histograms()["sustain"]["get"]["hist"])
    assert merged.get_total_count() == whole.get_total_count()
    assert merged.get_value_at_percentile(99) == whole.get_value_at_percentile(99)
    assert decode(ops[0].hist or "").get_min_value() == 100


def test_series_below_the_limit_is_untouched() -> None:
    aggregator = Aggregator(["get"], corrected=False, phase_offsets={"sustain": 0.0})
    aggregator.live = {0}
    for index in range(5):
        aggregator.add(_frame(index, [200], errors=0))
    assert [record.duration for record in aggregator.series] == [1.0] * 5
    assert [record.index for record in aggregator.series] == list(range(5))


def test_lag_verdict_counts_every_interval_after_merges() -> None:
    aggregator = Aggregator(["get"], corrected=False, phase_offsets={"sustain": 0.0})
    aggregator.live = {0}
    aggregator.series_limit = 8
    lags = [80.0 if index % 4 == 0 else 1.0 for index in range(40)]
    for index, lag in enumerate(lags):
        aggregator.add({**_frame(index, [200], errors=0), "lag_ms": lag})
    assert len(aggregator.series) == 8
    tally = aggregator.lagging["sustain"]
    assert (tally.total, tally.over) == (40, 10)
    # the coarsened records keep each stretch's worst lag: 6 of 8 would read as 75%
    assert [record.lag_ms for record in aggregator.series].count(80.0) == 6
