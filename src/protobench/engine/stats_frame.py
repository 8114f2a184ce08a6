"""A worker's ``STATS`` frame: one interval of one phase, typed where the controller takes it.

The worker sends it as JSON once per interval (:class:`StatsWire`, each op an
:class:`~protobench.engine.metrics.OpWire`); :meth:`StatsFrame.decode` turns
the parsed payload into typed fields once, before the aggregator merges it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

from protobench.engine.metrics import OpInterval, OpWire


class StatsWire(TypedDict):
    """The JSON payload of a ``STATS`` frame, as the worker sends it."""

    worker: int
    phase: str
    index: int
    t0: float
    t1: float
    """The interval's start and end, seconds into its phase."""
    ops: dict[str, OpWire]
    lag_ms: NotRequired[float]
    inflight: NotRequired[int]


@dataclass(frozen=True, slots=True)
class StatsFrame:
    """One worker's figures of one interval: each op's results, its lag and exchanges in flight."""

    worker: int
    phase: str
    index: int
    t0: float
    t1: float
    ops: dict[str, OpInterval]
    lag_ms: float = 0.0
    inflight: int = 0

    @classmethod
    def decode(cls, wire: StatsWire) -> StatsFrame:
        """The frame of a parsed ``STATS`` payload."""
        return cls(
            worker=wire["worker"],
            phase=wire["phase"],
            index=wire["index"],
            t0=wire["t0"],
            t1=wire["t1"],
            ops={name: OpInterval.from_wire(op) for name, op in wire["ops"].items()},
            lag_ms=wire.get("lag_ms", 0.0),
            inflight=wire.get("inflight", 0),
        )
