"""What the monitor shows at one moment: immutable values, no Textual here.

:class:`RunView` is everything on screen, built by
:meth:`protobench.tui.model.RunModel.view` from the engine's own figures (the
phase so far, the live verdicts, the final report) and the monitor's view
state (the last window, the charts' history). It shares no mutable state
with the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from protobench.engine.events import (
    HostSample,
    Notice,
    ProcessSample,
    ProfileUpdate,
    RunStarted,
)
from protobench.engine.report_model import NO_SESSION_NOTICE, Report, to_plain
from protobench.engine.summaries import EMPTY_OP, LatencySummary, PhaseSummary

ALERT_KINDS = frozenset({"worker", "workers", "target", NO_SESSION_NOTICE})


@dataclass(frozen=True)
class RunInfo:
    """What the run is: from ``RunStarted`` (the plan and the workers)."""

    profile: str
    protocol: str
    description: str
    target: str
    target_kind: str
    model: str
    sessions: int
    rate: float | None
    ramp_to: float | None
    workers: int
    warmup: float
    duration: float
    interval: float
    ops: tuple[str, ...]
    thresholds: tuple[str, ...]
    sessions_opened: int
    sessions_failed: int
    log_dir: str
    requests: int | None = None
    """The exchanges that end the sustain (``-n``), when counted."""

    @property
    def open_model(self) -> bool:
        return self.model == "open"

    @classmethod
    def from_started(cls, event: RunStarted) -> RunInfo:
        plan: dict[str, Any] = dict(event.plan)
        groups = plan.get("groups", [])
        return cls(
            profile=str(plan.get("profile", "")),
            protocol=str(plan.get("protocol", "")),
            description=str(plan.get("description", "")),
            target=event.target,
            target_kind=event.target_kind,
            model=str(plan.get("model", "closed")),
            sessions=sum(int(g.get("count", 0)) for g in groups),
            rate=plan.get("rate"),
            ramp_to=plan.get("ramp_to"),
            workers=event.workers,
            warmup=float(plan.get("warmup", 0.0)),
            duration=float(plan.get("duration", 0.0)),
            interval=float(plan.get("interval", 1.0)),
            ops=tuple(str(g["name"]) for g in groups),
            thresholds=tuple(plan.get("thresholds", ())),
            sessions_opened=event.sessions_opened,
            sessions_failed=event.sessions_failed,
            log_dir=event.log_dir,
            requests=plan.get("requests"),
        )


@dataclass(frozen=True)
class OpStats:
    """One operation (or ``total``): rates, phase counts, latency, errors.

    ``throughput`` is over the last window, ``phase_throughput`` over the
    measured phase; ``latency`` has the keys ``window``, ``phase`` and, in the
    open model, ``window_uncorrected`` and ``phase_uncorrected``.
    """

    name: str
    throughput: float
    phase_throughput: float
    ok: int
    errors: int
    error_rate: float
    late: int
    latency: dict[str, dict[str, float]]
    errors_by_class: dict[str, int]
    last_errors: dict[str, str]
    latency_kind: str = "round_trip"
    """What the latency measures (``mixed`` for a total over kinds: no latency then)."""
    error_codes: dict[str, int] = field(default_factory=dict)
    """Errors by ``class:code`` over the run, as the engine counts them."""
    counters: dict[str, int] = field(default_factory=dict)
    """The protocol's counters over the measured phase (``down_us``, ``received``...)."""
    bytes_in: int = 0
    """Bytes received over the measured phase."""
    bytes_out: int = 0
    """Bytes sent over the measured phase."""
    seconds: float = 0.0
    """The measured phase's seconds so far."""
    samples: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """``throughput`` and ``p99`` of each sustain interval (for a baseline's test)."""
    generator_delay: dict[str, float] = field(default_factory=dict)
    """The generator's own delay in taking up replies over the measured phase, in µs (the
    report's keys; empty when the kernel's clock did not time them)."""

    @classmethod
    def of(
        cls,
        scope: str | None,
        phases: Mapping[str, PhaseSummary],
        measured: str,
        window: tuple[float, dict[str, dict[str, float]]],
        samples: dict[str, tuple[float, ...]],
    ) -> OpStats:
        """Op ``scope``'s (None: the ``total``'s) figures: the engine's, of the ``measured``
        phase so far and its errors over every phase so far; the monitor's last
        ``window`` (throughput and latencies) and ``samples``."""
        phase = phases.get(measured)
        op = (phase.scope(scope) if phase else None) or EMPTY_OP
        by_class: Counter[str] = Counter()
        codes: Counter[str] = Counter()
        last: dict[str, str] = {}
        for each in phases.values():
            figures = each.scope(scope) or EMPTY_OP
            by_class.update(figures.errors_by_class)
            codes.update(figures.error_codes)
            last.update(figures.last_errors or {})
        latency = {**window[1], "phase": _plain(op.latency_us)}
        if "window_uncorrected" in latency:
            latency["phase_uncorrected"] = _plain(op.latency_uncorrected_us)
        return cls(
            name=scope or "total",
            throughput=window[0],
            phase_throughput=op.throughput,
            ok=op.ok,
            errors=op.errors,
            error_rate=op.error_rate,
            late=op.late,
            latency=latency,
            errors_by_class=dict(by_class),
            last_errors=last,
            latency_kind=op.latency_kind,
            error_codes=dict(codes),
            counters=dict(op.counters),
            bytes_in=op.bytes_in,
            bytes_out=op.bytes_out,
            seconds=phase.duration_s if phase else 0.0,
            samples=samples,
            generator_delay=_plain(op.generator_delay_us) if op.generator_delay_us else {},
        )


def _plain(latency: LatencySummary | None) -> dict[str, float]:
    """A latency as the tables read it: the report's keys (only ``count`` when empty)."""
    figures: dict[str, float] = to_plain(latency or LatencySummary(count=0))
    return figures


def is_alert(notice: Notice) -> bool:
    """A notice the user must see at once (a worker or the target gone, no session open)."""
    return notice.kind in ALERT_KINDS


@dataclass(frozen=True)
class Resources:
    """The newest resource sample; ``target_gone`` once a watched target vanished."""

    elapsed: float
    workers: tuple[ProcessSample, ...]
    target: ProcessSample | None
    target_gone: bool
    host: HostSample


@dataclass(frozen=True)
class ThresholdState:
    """A threshold now: ``ok`` is None until the sustain phase has figures (and for good
    when the run measured nothing: not evaluated)."""

    expr: str
    value: float | None
    ok: bool | None


@dataclass(frozen=True)
class RunView:
    """Everything on screen at one moment (immutable; safe across threads)."""

    state: str
    info: RunInfo | None
    phase: str
    measured_phase: str
    elapsed: float
    paused: bool
    rate_factor: float
    window_seconds: float
    times: tuple[float, ...]
    """The run time at the end of each chart point (an interval, or a short one merged in)."""
    throughput: dict[str, tuple[float, ...]]
    errors_per_second: dict[str, tuple[float, ...]]
    """Errors per second of each op and the ``total``, one value per interval."""
    latency_history: dict[str, dict[str, tuple[float, ...]]]
    """Each op's and the ``total``'s ``p50``, ``p99``, ``p999`` (and ``..._uncorrected``) per
    chart point, in µs (NaN: no sample)."""
    error_code_history: dict[str, dict[str, tuple[float, ...]]]
    """Each op's and the ``total``'s errors per second of each ``class:code``, per point."""
    ops: tuple[OpStats, ...]
    total: OpStats | None
    distribution: dict[str, tuple[tuple[float, float, int], ...]]
    resources: Resources | None
    cpu_history: dict[str, tuple[float, ...]]
    generator_bound: bool
    generator_reason: str | None
    thresholds: tuple[ThresholdState, ...]
    notices: tuple[Notice, ...]
    lag_ms: float
    inflight: int
    report: Report | None = None
    exit_code: int | None = None
    host_saturated: bool = False
    host_reason: str | None = None
    marks: tuple[tuple[float, str], ...] = ()
    """Run times to mark on the charts: phase starts, pauses, resumes, rate changes."""
    worker_lag_ms: dict[int, float] = field(default_factory=dict)
    """Each worker's event-loop lag in the newest interval."""
    profile: ProfileUpdate | None = None
    """The target's top functions over the last profile chunk (``--profile-target``)."""

    @property
    def snapshot(self) -> str | None:
        return None if self.report is None else self.report.snapshot
