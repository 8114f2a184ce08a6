"""Histogram folding and merging are exact."""

from __future__ import annotations

import gc
import random
import weakref
from array import array

from hdrh.histogram import HdrHistogram

from protobench.engine.metrics import (
    HIGHEST_US,
    OpAccumulator,
    OpInterval,
    OpRecorder,
    add_encoded,
    counts_view,
    decode,
    encode,
    fold,
    merge,
    new_histogram,
    summary,
)
from protobench.vocab.errors import ErrorClass, OpError


def _values(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [int(rng.lognormvariate(12, 1.5)) for _ in range(n)]


def test_fold_equals_record_value() -> None:
    values = [*_values(1, 20_000), 0, 999, 1_000, 1_001, 59_999_999_000]
    folded = new_histogram()
    assert fold(folded, array("q", values)) == 0
    recorded = new_histogram()
    for value in values:
        recorded.record_value(value // 1000)
    assert list(counts_view(folded)) == list(counts_view(recorded))
    assert folded.get_total_count() == recorded.get_total_count()
    assert summary(folded) == summary(recorded)


def test_out_of_range_values_are_counted_and_kept_at_the_top() -> None:
    hist = new_histogram()
    assert fold(hist, [61_000_000_000, 5_000, 10**15]) == 2
    assert hist.get_total_count() == 3
    assert hist.get_max_value() >= HIGHEST_US


def test_merged_worker_histograms_equal_one_histogram_of_all_values() -> None:
    workers = [_values(seed, 5_000) for seed in range(4)]
    encoded = []
    for values in workers:
        recorder = OpRecorder("op")
        recorder.latencies.extend(values)
        encoded.append(recorder.flush().hist)
    merged = merge(encoded)
    single = new_histogram()
    fold(single, [v for values in workers for v in values])
    assert list(counts_view(merged)) == list(counts_view(single))
    assert summary(merged) == summary(single)


def test_recorder_flush_resets_in_place_and_counts_errors() -> None:
    recorder = OpRecorder("op")
    append = recorder.latencies.append
    append(1_000_000)
    recorder.error(OpError(ErrorClass.PROTOCOL, "Service Unavailable", code="503"))
    recorder.count("lost", 3)
    first = recorder.flush()
    assert first.ok == 1
    assert first.errors == {"protocol": 1}
    assert first.error_codes == {"protocol:503": 1}
    assert first.counters == {"lost": 3}
    append(2_000_000)
    second = recorder.flush()
    assert second.ok == 1
    assert second.errors == {}
    assert decode(second.hist).get_max_value() >= 2_000


def test_accumulator_adds_intervals_exactly() -> None:
    acc = OpAccumulator()
    for seed in range(3):
        recorder = OpRecorder("op")
        recorder.latencies.extend(_values(seed, 1_000))
        recorder.error(OpError(ErrorClass.TIMEOUT, "slow"))
        acc.add(recorder.flush())
    assert acc.ok == 3_000
    assert acc.errors == {"timeout": 3}
    assert acc.hist.get_total_count() == 3_000


def _live_histograms() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, HdrHistogram))


def test_histograms_are_freed_when_dropped_without_the_cycle_collector() -> None:
    """A worker's interval histograms and the controller's decoded ones never pile up."""
    recorder = OpRecorder("get")
    accumulator = OpAccumulator()
    gc.collect()
    gc.disable()
    try:
        before = _live_histograms()
        dropped = weakref.ref(new_histogram())
        assert dropped() is None
        for _ in range(20):
            recorder.latencies.extend(_values(3, 100))
            recorder.uncorrected.extend(_values(4, 100))
            accumulator.add(recorder.flush())
        assert merge([encode(decode(accumulator.to_interval().hist))] * 3).get_total_count()
        assert _live_histograms() == before
    finally:
        gc.enable()
    assert accumulator.ok == 2_000
    assert accumulator.hist.get_total_count() == 2_000
    assert accumulator.hist_uncorrected.get_total_count() == 2_000


def test_folding_in_batches_during_an_interval_equals_one_fold_at_its_end() -> None:
    values = [*_values(7, 3_000), 61_000_000_000]  # one out of range
    unc = _values(8, 3_000)
    batched, whole = OpRecorder("op"), OpRecorder("op")
    for start in range(0, len(values), 700):
        batched.latencies.extend(values[start : start + 700])
        batched.uncorrected.extend(unc[start : start + 700])
        batched.fold_pending()
        assert len(batched.latencies) == 0  # moved into the interval's histogram
    whole.latencies.extend(values)
    whole.uncorrected.extend(unc)
    first, reference = batched.flush(), whole.flush()
    assert first.ok == reference.ok == len(values)
    assert first.out_of_range == reference.out_of_range == 1
    assert list(counts_view(decode(first.hist))) == list(counts_view(decode(reference.hist)))
    assert summary(decode(first.hist_uncorrected)) == summary(decode(reference.hist_uncorrected))
    empty = batched.flush()  # the next interval starts empty
    assert (empty.ok, empty.hist, empty.hist_uncorrected, empty.out_of_range) == (0, "", "", 0)


def test_send_lateness_is_folded_flushed_and_merged_like_the_latencies() -> None:
    recorder = OpRecorder("op")
    recorder.lateness.extend([3_000, 40_000, 250_000])  # ns
    recorder.fold_pending(at_least=1_000)
    assert len(recorder.lateness) == 3  # fewer than asked for: left for later
    first = recorder.flush()
    assert len(recorder.lateness) == 0
    recorder.lateness.append(7_000)
    second = recorder.flush()
    acc = OpAccumulator()
    acc.add(OpInterval.from_wire(first.to_wire()))
    acc.add(OpInterval.from_wire(second.to_wire()))
    merged = summary(decode(acc.to_interval().hist_lateness))
    assert (merged["count"], merged["min"], merged["max"]) == (4, 3, 250)
    assert recorder.flush().hist_lateness == ""  # nothing sent: nothing on the wire


def _hdrh_add(hist: HdrHistogram, encoded: str) -> None:
    """hdrhistogram's own way: decode a histogram, add it."""
    hist.add(HdrHistogram.decode(encoded, hist.b64_wrap))


def test_adding_an_encoded_histogram_is_what_hdrhistogram_gives() -> None:
    """add_encoded adds decoded counts with numpy: the same counts, count, min, max and
    encoding as hdrhistogram's decode-and-add, for empty, tiny, zero and wide histograms."""
    rng = random.Random(11)
    for _ in range(200):
        parts = []
        for _ in range(rng.randint(1, 6)):
            part = new_histogram()
            for _ in range(rng.choice([0, 1, 7, 500])):
                value = 0 if rng.random() < 0.05 else int(rng.lognormvariate(6, 2.5))
                part.record_value(min(value, 60_000_000))
            parts.append(encode(part))
        ours, theirs = new_histogram(), new_histogram()
        for encoded in parts:
            add_encoded(ours, encoded)
            _hdrh_add(theirs, encoded)
        assert list(counts_view(ours)) == list(counts_view(theirs))
        assert (ours.total_count, ours.min_value, ours.max_value) == (
            theirs.total_count,
            theirs.min_value,
            theirs.max_value,
        )
        assert encode(ours) == encode(theirs)


def test_a_histogram_of_another_shape_is_added_by_hdrhistogram() -> None:
    other = HdrHistogram(1, 3_600_000_000, 2)
    for value in (5, 1_000, 2_000_000):
        other.record_value(value)
    hist = new_histogram()
    add_encoded(hist, other.encode().decode("ascii"))
    assert hist.get_total_count() == 3
    assert abs(hist.get_max_value() - 2_000_000) / 2_000_000 < 0.01  # within two digits
