"""The open model's rate: how it ramps over the run and how the groups share it.

Shared by the plan (each worker's part of each group's rate), the schedule
(the rate asked for at each moment) and the HTML report (the offered rate it
draws beside the achieved one). Imports nothing, so the report reads it
without loading the engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class RateGroup(Protocol):
    """A group as far as the rate goes: periodic (``every``) or given ``share`` of the rate."""

    @property
    def name(self) -> str: ...

    @property
    def every(self) -> float | None: ...

    @property
    def share(self) -> float: ...


def rate_shares(groups: Iterable[RateGroup]) -> dict[str, float]:
    """The fraction of the open-model rate each group that is not periodic is given."""
    paced = [g for g in groups if g.every is None]
    total = sum(g.share for g in paced) or 1.0
    return {g.name: g.share / total for g in paced}


def ramped_rate(rate: float, ramp_to: float, ramp_seconds: float, elapsed: float) -> float:
    """The rate asked for ``elapsed`` seconds into the run, before the live rate factor:
    from ``rate`` to ``ramp_to`` linearly over ``ramp_seconds`` (warmup and sustain), then
    ``ramp_to``."""
    fraction = min(1.0, max(0.0, elapsed / ramp_seconds))
    return rate + (ramp_to - rate) * fraction
