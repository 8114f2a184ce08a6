"""The events a run emits, in order, to every subscriber (JSON/NDJSON output, TUI, snapshot).

Subscribers receive plain frozen dataclasses; none of them can change the run.
Commands go the other way through :class:`protobench.engine.controller.Controller`
methods (``pause``, ``resume``, ``set_rate_factor``, ``stop``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunStarted:
    """Workers are up and sessions are open; the clock starts."""

    plan: dict[str, Any]
    target: str
    target_kind: str
    workers: int
    sessions_opened: int
    sessions_failed: int
    log_dir: str


@dataclass(frozen=True)
class PhaseChanged:
    """The run entered ``phase`` (warmup, sustain, drain) at ``elapsed`` seconds."""

    phase: str
    elapsed: float


@dataclass(frozen=True)
class IntervalUpdate:
    """One merged interval of all workers.

    ``ops`` maps each operation to its summary (ok, errors, throughput,
    ``latency_us`` percentiles, ``hist`` the encoded histogram and, in the open
    model, ``hist_uncorrected`` ...); ``total`` merges all operations.
    ``elapsed`` is the run time at the interval's end.
    """

    phase: str
    index: int
    elapsed: float
    duration: float
    ops: dict[str, dict[str, Any]]
    total: dict[str, Any]
    lag_ms: float
    inflight: int
    worker_lag_ms: dict[int, float] = field(default_factory=dict)
    """Each worker's event-loop lag in the interval (``lag_ms`` is the largest)."""


@dataclass(frozen=True)
class ResourceSample:
    """CPU and memory of the workers, the target process and the host."""

    elapsed: float
    workers: list[dict[str, Any]]
    target: dict[str, Any] | None
    host: dict[str, Any]


@dataclass(frozen=True)
class Notice:
    """Something the user should know: a worker died, the target stopped, a rate change."""

    kind: str
    message: str
    elapsed: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFinished:
    """The final report (the ``--json`` output) and where the snapshot was saved."""

    report: dict[str, Any]
    exit_code: int


Event = RunStarted | PhaseChanged | IntervalUpdate | ResourceSample | Notice | RunFinished
