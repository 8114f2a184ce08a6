"""The warmup's first interval is short, so the first figures come soon after the start."""

from __future__ import annotations

from protobench.engine.worker import FIRST_INTERVAL, interval_end


def test_the_warmup_starts_with_a_short_interval_then_whole_ones() -> None:
    ends = [interval_end(index, 1.0, early=True) for index in range(4)]
    assert ends == [FIRST_INTERVAL, 1.0, 2.0, 3.0]


def test_other_phases_keep_whole_intervals() -> None:
    assert [interval_end(index, 1.0, early=False) for index in range(3)] == [1.0, 2.0, 3.0]
