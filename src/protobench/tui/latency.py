"""Latency histograms as numpy counts arrays: windows and distributions for the screen.

The monitor keeps each interval's histogram as its counts array (the layout
of :func:`engine.metrics.new_histogram`): merging is an array sum and
:func:`engine.metrics.counts_summary` gives the exact percentiles in well
under a millisecond. :class:`Window` holds the sum of the last N intervals
("last 10 s") by adding the new interval and subtracting the one that leaves,
all in integers, so nothing is approximated.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from protobench.engine.metrics import HIGHEST, Counts, counts_view, decode


def zeros() -> Counts:
    return np.zeros(len(HIGHEST), dtype=np.int64)


def counts_of(encoded: str) -> Counts | None:
    """The counts array of an encoded histogram (``None`` for an empty one)."""
    if not encoded:
        return None
    return counts_view(decode(encoded)).copy()


def add_counts(into: Counts | None, counts: Counts | None) -> Counts | None:
    """``into`` plus ``counts`` (added in place; ``None`` is no histogram)."""
    if counts is None:
        return into
    if into is None:
        return counts.copy()
    into += counts
    return into


def distribution(counts: Counts, bins: int = 12) -> list[tuple[float, float, int]]:
    """``(low, high, count)`` over log-spaced latency ranges (µs) spanning the data."""
    nonzero = np.flatnonzero(counts)
    if len(nonzero) == 0:
        return []
    first = max(float(HIGHEST[nonzero[0]]), 1.0)
    last = max(float(HIGHEST[nonzero[-1]]), first + 1.0)
    edges = np.geomspace(first * 0.999, last, bins + 1)
    cumulative = np.concatenate(([0], np.cumsum(counts)))
    at_edges = cumulative[np.searchsorted(HIGHEST, edges, side="right")]
    at_edges[0] = 0
    at_edges[-1] = cumulative[-1]
    return [
        (float(edges[i]), float(edges[i + 1]), int(at_edges[i + 1] - at_edges[i]))
        for i in range(bins)
    ]


class Window:
    """The exact sum of the last ``size`` interval histograms."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._items: deque[Counts | None] = deque()
        self.counts = zeros()

    def push(self, counts: Counts | None) -> None:
        self._items.append(counts)
        if counts is not None:
            self.counts += counts
        if len(self._items) > self.size:
            gone = self._items.popleft()
            if gone is not None:
                self.counts -= gone
