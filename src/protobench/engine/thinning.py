"""How a long run's series stay bounded: the oldest finest records are merged in pairs.

A phase of the interval series (and of the resource samples) keeps about
:data:`SERIES_LIMIT` records: past it, :func:`pair_to_merge` names the oldest
adjacent pair of the finest records, which the caller merges into one, so the
recent past stays at full resolution and older stretches become coarser (2, 4,
8... intervals per record), as in a round-robin database. It imports nothing
heavy: the snapshot's loader (through the resource records, and the bounds of
:mod:`~protobench.snapshots.limits`) reads it too, before a replay's first frame.
"""

from __future__ import annotations

from collections.abc import Sequence

PHASES = ("warmup", "sustain", "drain")
"""The phases a run's series keeps records of, in their order."""
SERIES_LIMIT = 3600
"""Series records kept per phase (an hour of 1 s intervals at full resolution)."""


def pair_to_merge(phases: Sequence[str], weights: list[int], phase: str, limit: int) -> int | None:
    """Where the oldest finest adjacent pair of ``phase`` starts, if it has more than ``limit``.

    ``phases[i]`` is the phase of the series' record ``i``, and ``weights[i]``
    how many original records it covers; a pair is two neighbours of the
    phase with equal weights; the newest record is never merged (it stays as
    it came).
    """
    positions = [i for i, name in enumerate(phases) if name == phase]
    if len(positions) <= limit:
        return None
    pairs = [
        (weights[i], i)
        for i in positions[:-2]
        if phases[i + 1] == phase and weights[i] == weights[i + 1]
    ]
    return min(pairs)[1] if pairs else None
