"""Receiving segmented ComplexACKs: when SegmentACKs are due, what a lost segment does."""

from __future__ import annotations

import pytest

from protobench.protocols.bacnet_ip.segments import (
    MAX_SEGMENTS,
    WINDOW,
    Reassembly,
    segment_ack_apdu,
)


def test_first_segment_is_acknowledged_then_each_full_window_and_the_last() -> None:
    reassembly = Reassembly(service=12, proposed_window=3)
    acks = [reassembly.add(seq, seq < 7, bytes((seq,))) for seq in range(8)]
    assert acks == [(0, False), None, None, (3, False), None, None, (6, False), (7, False)]
    assert reassembly.complete
    assert reassembly.payload() == bytes(range(8))


def test_window_is_capped_at_ours() -> None:
    assert Reassembly(12, 127).window == WINDOW
    assert Reassembly(12, 0).window == 1


def test_lost_segment_is_answered_with_a_negative_ack_of_the_last_in_order() -> None:
    reassembly = Reassembly(service=12, proposed_window=4)
    assert reassembly.add(0, True, b"a") == (0, False)
    assert reassembly.add(1, True, b"b") is None
    assert reassembly.add(3, True, b"d") == (1, True)
    assert reassembly.add(2, True, b"c") is None
    assert reassembly.add(3, False, b"d") == (3, False)
    assert reassembly.payload() == b"abcd"


def test_segment_count_is_bounded() -> None:
    reassembly = Reassembly(service=12, proposed_window=WINDOW)
    for seq in range(MAX_SEGMENTS):
        reassembly.add(seq, True, b"x")
    with pytest.raises(ValueError, match="segments"):
        reassembly.add(MAX_SEGMENTS, True, b"x")


def test_segment_ack_pdu_of_a_client() -> None:
    assert segment_ack_apdu(7, (3, False), 4) == bytes((0x40, 7, 3, 4))
    assert segment_ack_apdu(7, (3, True), 4) == bytes((0x42, 7, 3, 4))
