"""The monitor's picture of a run, built from engine events; no Textual here.

:class:`RunModel` folds every event in (:meth:`RunModel.apply`, cheap: counts
arrays are added, nothing is sorted) and, when the screen is due for a
refresh, computes an immutable :class:`RunView` (:meth:`RunModel.view`) with
everything the widgets show: throughput series, latency percentiles of the
last window and of the whole phase (corrected and, in the open model,
uncorrected), the latency distribution, errors by class, the newest resource
sample, threshold states and the generator-bound verdict. A view shares no
mutable state with the model, so it may be built in the engine's thread and
read in the UI's.

Thresholds and the generator-bound and host-saturated verdicts are evaluated
live with the engine's own rules (:mod:`engine.thresholds`,
:func:`engine.verdicts.cpu_verdicts`) against the sustain phase so far; when
the run ends, the report's verdicts replace them. A ``RunStarted`` resets the
model (a replay seeking backwards).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from protobench.engine.bounds import Tally, lagging
from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.metrics import Counts, counts_summary
from protobench.engine.resource_log import ResourceFigures
from protobench.engine.thresholds import evaluate
from protobench.engine.verdicts import cpu_verdicts
from protobench.tui.latency import Window, counts_of, distribution, zeros
from protobench.vocab.thresholds import parse_threshold

WINDOW_SECONDS = 10.0
HISTORY = 300
DISTRIBUTION_BINS = 16
ALERT_KINDS = frozenset({"worker", "workers", "target"})
MARKED = frozenset({"pause", "resume", "rate"})
"""Notices marked on the charts (beside phase starts)."""
LATENCY_KEYS = ("window", "phase", "window_uncorrected", "phase_uncorrected")


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

    @property
    def open_model(self) -> bool:
        return self.model == "open"

    @classmethod
    def from_started(cls, event: RunStarted) -> RunInfo:
        plan = event.plan
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
        )


@dataclass(frozen=True)
class OpStats:
    """One operation (or ``total``): rates, phase counts, latency, errors.

    ``throughput`` is over the last window, ``phase_throughput`` over the
    measured phase; ``latency`` has the keys of :data:`LATENCY_KEYS` (the
    uncorrected ones in the open model only).
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
    seconds: float = 0.0
    """The measured phase's seconds so far."""
    samples: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """``throughput`` and ``p99`` of each sustain interval (for a baseline's test)."""


@dataclass(frozen=True)
class NoticeItem:
    kind: str
    message: str
    elapsed: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def alert(self) -> bool:
        return self.kind in ALERT_KINDS


@dataclass(frozen=True)
class Resources:
    """The newest resource sample; ``target_gone`` once a watched target vanished."""

    elapsed: float
    workers: tuple[dict[str, Any], ...]
    target: dict[str, Any] | None
    target_gone: bool
    host: dict[str, Any]


@dataclass(frozen=True)
class ThresholdState:
    """A threshold now: ``ok`` is None until the sustain phase has figures."""

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
    throughput: dict[str, tuple[float, ...]]
    errors_per_second: dict[str, tuple[float, ...]]
    """Errors per second of each op and the ``total``, one value per interval."""
    ops: tuple[OpStats, ...]
    total: OpStats | None
    distribution: dict[str, tuple[tuple[float, float, int], ...]]
    resources: Resources | None
    cpu_history: dict[str, tuple[float, ...]]
    generator_bound: bool
    generator_reason: str | None
    thresholds: tuple[ThresholdState, ...]
    notices: tuple[NoticeItem, ...]
    lag_ms: float
    inflight: int
    report: dict[str, Any] | None = None
    exit_code: int | None = None
    host_saturated: bool = False
    host_reason: str | None = None
    marks: tuple[tuple[float, str], ...] = ()
    """Run times to mark on the charts: phase starts, pauses, resumes, rate changes."""
    worker_lag_ms: dict[int, float] = field(default_factory=dict)
    """Each worker's event-loop lag in the newest interval."""

    @property
    def snapshot(self) -> str | None:
        return None if self.report is None else self.report.get("snapshot")


def empty_view() -> RunView:
    """The view before anything happened."""
    return RunModel().view()


class _Track:
    """Counts of one operation (or the total) for the window, the phases and the charts."""

    def __init__(self, window: int, uncorrected: bool) -> None:
        self.window = Window(window)
        self.window_uncorrected = Window(window) if uncorrected else None
        self.recent: deque[tuple[int, float]] = deque(maxlen=window)
        self.phase: dict[str, Counts] = {}
        self.phase_uncorrected: dict[str, Counts] = {}
        self.phase_ok: dict[str, int] = {}
        self.phase_errors: dict[str, int] = {}
        self.phase_late: dict[str, int] = {}
        self.phase_bytes_in: dict[str, int] = {}
        self.phase_counters: dict[str, dict[str, int]] = {}
        self.errors_by_class: dict[str, int] = {}
        self.error_codes: dict[str, int] = {}
        self.last_errors: dict[str, str] = {}
        self.history: deque[float] = deque(maxlen=HISTORY)
        self.error_history: deque[float] = deque(maxlen=HISTORY)
        self.samples: dict[str, deque[float]] = {
            "throughput": deque(maxlen=HISTORY),
            "p99": deque(maxlen=HISTORY),
        }
        self.latency_kind = "round_trip"

    def add(
        self,
        phase: str,
        data: dict[str, Any],
        seconds: float,
        counts: Counts | None,
        uncorrected: Counts | None,
    ) -> None:
        self.latency_kind = str(data.get("latency_kind", self.latency_kind))
        for cls, n in data.get("errors_by_class", {}).items():
            self.errors_by_class[cls] = self.errors_by_class.get(cls, 0) + n
        for code, n in data.get("error_codes", {}).items():
            self.error_codes[code] = self.error_codes.get(code, 0) + n
        self.last_errors.update(data.get("last_errors", {}))
        self.phase_ok[phase] = self.phase_ok.get(phase, 0) + int(data.get("ok", 0))
        self.phase_errors[phase] = self.phase_errors.get(phase, 0) + int(data.get("errors", 0))
        self.phase_late[phase] = self.phase_late.get(phase, 0) + int(data.get("late", 0))
        self.phase_bytes_in[phase] = self.phase_bytes_in.get(phase, 0) + int(
            data.get("bytes_in", 0)
        )
        counters = self.phase_counters.setdefault(phase, {})
        for name, n in data.get("counters", {}).items():
            counters[name] = counters.get(name, 0) + int(n)
        _add(self.phase, phase, counts)
        _add(self.phase_uncorrected, phase, uncorrected)
        if phase == "drain":
            return
        self.window.push(counts)
        if self.window_uncorrected is not None:
            self.window_uncorrected.push(uncorrected)
        self.recent.append((int(data.get("ok", 0)), seconds))
        self.history.append(float(data.get("throughput", 0.0)))
        self.error_history.append(int(data.get("errors", 0)) / seconds if seconds > 0 else 0.0)
        if phase == "sustain":
            self.samples["throughput"].append(float(data.get("throughput", 0.0)))
            p99 = data.get("latency_us", {}).get("p99")
            if p99 is not None:
                self.samples["p99"].append(float(p99))

    def stats(self, name: str, phase: str, seconds: float) -> OpStats:
        ok = self.phase_ok.get(phase, 0)
        errors = self.phase_errors.get(phase, 0)
        window_seconds = sum(s for _, s in self.recent)
        latency = {
            "window": counts_summary(self.window.counts),
            "phase": counts_summary(self.phase.get(phase, zeros())),
        }
        if self.window_uncorrected is not None:
            latency["window_uncorrected"] = counts_summary(self.window_uncorrected.counts)
            latency["phase_uncorrected"] = counts_summary(
                self.phase_uncorrected.get(phase, zeros())
            )
        return OpStats(
            name=name,
            throughput=sum(n for n, _ in self.recent) / window_seconds if window_seconds else 0.0,
            phase_throughput=ok / seconds if seconds > 0 else 0.0,
            ok=ok,
            errors=errors,
            error_rate=errors / (ok + errors) if ok + errors else 0.0,
            late=self.phase_late.get(phase, 0),
            latency=latency,
            errors_by_class=dict(self.errors_by_class),
            last_errors=dict(self.last_errors),
            latency_kind=self.latency_kind,
            error_codes=dict(self.error_codes),
            counters=dict(self.phase_counters.get(phase, {})),
            bytes_in=self.phase_bytes_in.get(phase, 0),
            seconds=seconds,
            samples={metric: tuple(values) for metric, values in self.samples.items()},
        )

    def scope(self, phase: str, seconds: float) -> dict[str, Any]:
        """The phase's figures in the report's shape (for thresholds and verdicts)."""
        ok = self.phase_ok.get(phase, 0)
        errors = self.phase_errors.get(phase, 0)
        return {
            "ok": ok,
            "errors": errors,
            "error_rate": errors / (ok + errors) if ok + errors else 0.0,
            "throughput": ok / seconds if seconds > 0 else 0.0,
            "late": self.phase_late.get(phase, 0),
            "counters": dict(self.phase_counters.get(phase, {})),
            "latency_us": counts_summary(self.phase.get(phase, zeros())),
        }


def _add(target: dict[str, Counts], phase: str, counts: Counts | None) -> None:
    if counts is None:
        return
    if phase in target:
        target[phase] += counts
    else:
        target[phase] = counts.copy()


class RunModel:
    """Folds events into the state behind :class:`RunView`."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.info: RunInfo | None = None
        self.state = "starting"
        self.phase = ""
        self.measured_phase = ""
        self.elapsed = 0.0
        self.paused = False
        self.rate_factor = 1.0
        self.tracks: dict[str, _Track] = {}
        self.total: _Track | None = None
        self.phase_seconds: dict[str, float] = {}
        self.times: deque[float] = deque(maxlen=HISTORY)
        self.resources: Resources | None = None
        self.cpu_history: dict[str, deque[float]] = {
            key: deque(maxlen=HISTORY) for key in ("generator", "target", "host")
        }
        self.sustain_resources = ResourceFigures()
        self.lagging = Tally()
        self.notices: list[NoticeItem] = []
        self.marks: list[tuple[float, str]] = []
        self.target_pid: int | None = None
        self.target_gone = False
        self.lag_ms = 0.0
        self.worker_lag_ms: dict[int, float] = {}
        self.inflight = 0
        self.report: dict[str, Any] | None = None
        self.exit_code: int | None = None
        self._verdict_key = (0, 0)
        self._verdict_value: dict[str, Any] = {}

    def apply(self, event: Event) -> list[NoticeItem]:
        """Fold one event in; return the notices the user should be alerted to."""
        if isinstance(event, RunStarted):
            self.reset()
            self.info = RunInfo.from_started(event)
            self.state = "running"
            window = max(1, round(WINDOW_SECONDS / max(self.info.interval, 1e-3)))
            uncorrected = self.info.open_model
            self.tracks = {op: _Track(window, uncorrected) for op in self.info.ops}
            self.total = _Track(window, uncorrected)
        elif isinstance(event, PhaseChanged):
            self.marks.append((event.elapsed, event.phase))
            self.phase = event.phase
            self.elapsed = max(self.elapsed, event.elapsed)
        elif isinstance(event, IntervalUpdate):
            self._interval(event)
        elif isinstance(event, ResourceSample):
            return self._resources(event)
        elif isinstance(event, Notice):
            return self._notice(NoticeItem(event.kind, event.message, event.elapsed, event.details))
        elif isinstance(event, RunFinished):
            self.state = "finished"
            self.report = event.report
            self.exit_code = event.exit_code
            self.paused = False
            self._last_errors_from(event.report)
        return []

    def _last_errors_from(self, report: dict[str, Any]) -> None:
        """Fill in last error messages a replayed series does not keep."""
        for section in report.get("phases", {}).values():
            scopes = [*section.get("ops", {}).items(), ("", section.get("total", {}))]
            for name, scope in scopes:
                track = self.tracks.get(name) if name else self.total
                if track is not None:
                    for cls, message in scope.get("last_errors", {}).items():
                        track.last_errors.setdefault(cls, message)

    def _interval(self, event: IntervalUpdate) -> None:
        if self.total is None:
            return
        phase = event.phase
        self.elapsed = max(self.elapsed, event.elapsed)
        self.lag_ms, self.inflight = event.lag_ms, event.inflight
        self.worker_lag_ms = event.worker_lag_ms
        if phase != "drain":
            self.measured_phase = phase
            self.phase_seconds[phase] = self.phase_seconds.get(phase, 0.0) + event.duration
            self.times.append(event.elapsed)
            if phase == "sustain":
                self.lagging.add(lagging(event.lag_ms))
        total_counts: Counts | None = None
        total_uncorrected: Counts | None = None
        kinds = {data.get("latency_kind", "round_trip") for data in event.ops.values()}
        for name, data in event.ops.items():
            track = self.tracks.get(name)
            if track is None:
                continue
            counts = counts_of(data.get("hist", ""))
            uncorrected = counts_of(data.get("hist_uncorrected", ""))
            track.add(phase, data, event.duration, counts, uncorrected)
            if len(kinds) == 1:  # a total latency only across ops that measure the same thing
                total_counts = _sum(total_counts, counts)
                total_uncorrected = _sum(total_uncorrected, uncorrected)
        self.total.add(phase, event.total, event.duration, total_counts, total_uncorrected)

    def _resources(self, event: ResourceSample) -> list[NoticeItem]:
        self.elapsed = max(self.elapsed, event.elapsed)
        alerts = []
        if event.target is not None:
            self.target_pid = event.target.get("pid")
        elif self.target_pid is not None and not self.target_gone and self.state == "running":
            self.target_gone = True
            alerts = self._notice(
                NoticeItem(
                    "target",
                    f"the target process (pid {self.target_pid}) is gone",
                    event.elapsed,
                    {"pid": self.target_pid},
                )
            )
        self.resources = Resources(
            event.elapsed, tuple(event.workers), event.target, self.target_gone, event.host
        )
        cpus = [float(w.get("cpu", 0.0)) for w in event.workers]
        self.cpu_history["generator"].append(max(cpus, default=0.0))
        self.cpu_history["target"].append(float((event.target or {}).get("cpu", 0.0)))
        self.cpu_history["host"].append(float(event.host.get("cpu", 0.0)))
        if self.phase == "sustain":
            self.sustain_resources.add(
                {"workers": event.workers, "target": event.target, "host": event.host}
            )
        return alerts

    def _notice(self, item: NoticeItem) -> list[NoticeItem]:
        """Keep a notice; a gone target is kept once (the engine's and ours name its pid)."""
        if item.kind == "target" and "pid" in item.details:
            if any(n.kind == "target" and n.details == item.details for n in self.notices):
                return []
            self.target_gone = True
        self.notices.append(item)
        if item.kind in MARKED:
            self.marks.append((item.elapsed, item.kind))
        if item.kind == "pause":
            self.paused = True
        elif item.kind == "resume":
            self.paused = False
        elif item.kind == "rate":
            self.rate_factor = float(item.details.get("factor", self.rate_factor))
        return [item]

    def view(self) -> RunView:
        """Compute the immutable picture of the run now."""
        phase = self.measured_phase
        seconds = self.phase_seconds.get(phase, 0.0)
        ops = tuple(track.stats(name, phase, seconds) for name, track in self.tracks.items())
        total = self.total.stats("total", phase, seconds) if self.total else None
        throughput = {name: tuple(t.history) for name, t in self.tracks.items()}
        errors = {name: tuple(t.error_history) for name, t in self.tracks.items()}
        if self.total is not None:
            throughput["total"] = tuple(self.total.history)
            errors["total"] = tuple(self.total.error_history)
        distributions: dict[str, tuple[tuple[float, float, int], ...]] = {}
        if self.total is not None:
            window = self.total.window.counts
            distributions["corrected"] = tuple(distribution(window, DISTRIBUTION_BINS))
            if self.total.window_uncorrected is not None:
                distributions["uncorrected"] = tuple(
                    distribution(self.total.window_uncorrected.counts, DISTRIBUTION_BINS)
                )
        verdict = self._verdict()
        return RunView(
            state=self.state,
            info=self.info,
            phase=self.phase,
            measured_phase=phase,
            elapsed=self.elapsed,
            paused=self.paused,
            rate_factor=self.rate_factor,
            window_seconds=WINDOW_SECONDS,
            times=tuple(self.times),
            throughput=throughput,
            errors_per_second=errors,
            marks=tuple(self.marks),
            ops=ops,
            total=total,
            distribution=distributions,
            resources=self.resources,
            cpu_history={k: tuple(v) for k, v in self.cpu_history.items()},
            generator_bound=bool(verdict.get("generator_bound")),
            generator_reason=verdict.get("reason"),
            host_saturated=bool(verdict.get("host_saturated")),
            host_reason=verdict.get("host_reason"),
            thresholds=self._thresholds(),
            notices=tuple(self.notices),
            lag_ms=self.lag_ms,
            worker_lag_ms=dict(self.worker_lag_ms),
            inflight=self.inflight,
            report=self.report,
            exit_code=self.exit_code,
        )

    def _sustain_report(self) -> dict[str, Any] | None:
        seconds = self.phase_seconds.get("sustain", 0.0)
        if self.total is None or seconds <= 0:
            return None
        return {
            "phases": {
                "sustain": {
                    "total": self.total.scope("sustain", seconds),
                    "ops": {n: t.scope("sustain", seconds) for n, t in self.tracks.items()},
                }
            },
            "model": {"type": self.info.model if self.info else "closed"},
            "resources": {"host": {**self.sustain_resources.host_shares(), "cpus": self._cpus()}},
            "thresholds": [],
            "partial": False,
        }

    def _cpus(self) -> int | None:
        return self.sustain_resources.host_cpus

    def _thresholds(self) -> tuple[ThresholdState, ...]:
        if self.report is not None:
            return tuple(
                ThresholdState(t["expr"], t["value"], t["ok"]) for t in self.report["thresholds"]
            )
        if self.info is None:
            return ()
        report = self._sustain_report()
        states = []
        for expr in self.info.thresholds:
            if report is None:
                states.append(ThresholdState(expr, None, None))
                continue
            value, ok = evaluate(parse_threshold(expr), report)
            states.append(ThresholdState(expr, value, ok if value is not None else None))
        return tuple(states)

    def _verdict(self) -> dict[str, Any]:
        if self.report is not None:
            found: dict[str, Any] = self.report.get("verdicts", {})
            return found
        figures = self.sustain_resources
        key = (figures.samples, self.lagging.total)
        if self._verdict_key != key:
            report = self._sustain_report()
            if report is not None:
                self._verdict_value = cpu_verdicts(
                    report, figures.busy, self.lagging, figures.host_busy
                )
            self._verdict_key = key
        return self._verdict_value


def _sum(into: Counts | None, counts: Counts | None) -> Counts | None:
    if counts is None:
        return into
    if into is None:
        return counts.copy()
    into += counts
    return into
