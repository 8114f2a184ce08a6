"""The publisher stamp, the size mix and the per-publisher sequence accounting."""

from __future__ import annotations

from collections import Counter

from protobench.protocols.mqtt.payload import (
    HEADER,
    HEADER_SIZE,
    MAGIC,
    MAX_GAPS,
    SequenceTracker,
    SizeMix,
    stamp,
)


def test_stamp_layout_is_big_endian_and_20_bytes() -> None:
    data = stamp(0x01020304, 5, 0x1122334455667788)
    assert HEADER_SIZE == 20
    assert data == bytes.fromhex("5042 0000 01020304 00000005 1122334455667788")
    assert HEADER.unpack(data) == (MAGIC, 0, 0x01020304, 5, 0x1122334455667788)


def test_sequence_wraps_at_32_bits() -> None:
    assert HEADER.unpack(stamp(1, 2**32 + 3, 0))[3] == 3


def feed(tracker: SequenceTracker, seqs: list[int], publisher: int = 7) -> Counter[str]:
    counters: Counter[str] = Counter()
    for seq in seqs:
        tracker.observe(publisher, seq, counters)
    return counters


def test_in_order_counts_nothing_and_first_message_starts_the_count() -> None:
    tracker = SequenceTracker()
    assert feed(tracker, list(range(100, 200))) == Counter()
    assert tracker.publishers == 1


def test_gaps_are_lost() -> None:
    assert feed(SequenceTracker(), [0, 1, 5, 6, 10]) == Counter(lost=6)


def test_late_arrival_is_out_of_order_not_lost() -> None:
    counters = feed(SequenceTracker(), [0, 1, 3, 4, 2, 5])
    assert counters["lost"] == 0
    assert counters["out_of_order"] == 1


def test_late_arrivals_inside_a_wide_gap_split_it() -> None:
    counters = feed(SequenceTracker(), [0, 10, 5, 1, 9, 5])
    assert counters["lost"] == 9 - 3
    assert counters["out_of_order"] == 3
    assert counters["duplicated"] == 1


def test_duplicates() -> None:
    counters = feed(SequenceTracker(), [0, 1, 1, 2, 0, 2])
    assert counters == Counter(duplicated=3)


def test_publishers_are_independent() -> None:
    tracker = SequenceTracker()
    counters: Counter[str] = Counter()
    for seq in range(10):
        tracker.observe(1, seq, counters)
        tracker.observe(2, seq * 2, counters)
    assert counters == Counter(lost=9)
    assert tracker.publishers == 2


def test_gap_memory_is_bounded() -> None:
    tracker = SequenceTracker()
    seqs = [i * 2 for i in range(MAX_GAPS + 10)]
    counters = feed(tracker, seqs)
    assert counters["lost"] == MAX_GAPS + 9
    counters.update(feed(tracker, [1]))  # the oldest gap was forgotten
    assert counters["duplicated"] == 1
    counters.update(feed(tracker, [seqs[-1] - 1]))  # the newest is remembered
    assert counters["out_of_order"] == 1


def test_size_mix_follows_the_weights() -> None:
    mix = SizeMix({64: 70, 1024: 30}, seed=3)
    table = Counter(mix.size_for(i) for i in range(256))
    assert table == Counter({64: 179, 1024: 77})
    assert mix.sizes == (64, 1024)
    assert [mix.size_for(i) for i in range(256)] == [mix.size_for(i + 256) for i in range(256)]
