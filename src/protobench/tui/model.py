"""The monitor's state of a run, folded from engine events; no Textual here.

The engine computes every figure of a run once: each ``IntervalUpdate``
carries its phase so far (a :class:`~protobench.engine.summaries.PhaseSummary`,
what the report's phase would be if it ended now) and the verdicts so far
(thresholds, checks, the CPU verdict, judged like the report's); the final
``RunFinished`` carries the typed report. :class:`RunModel` adds only view
state: the last window's latency ("last 10 s", counts arrays added and
subtracted, :mod:`protobench.tui.latency`), the charts' history, the newest
resource sample, notices and marks. When the screen is due for a refresh,
:meth:`RunModel.view` builds an immutable :class:`~protobench.tui.view.RunView`.
A ``RunStarted`` resets the model (a replay seeking backwards).
"""

from __future__ import annotations

from collections import deque

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ProfileUpdate,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.metrics import Counts, counts_summary
from protobench.engine.report_model import LiveVerdicts, Report
from protobench.engine.summaries import OpSummary, PhaseSummary
from protobench.tui.latency import Window, add_counts, counts_of, distribution
from protobench.tui.view import (
    OpStats,
    Resources,
    RunInfo,
    RunView,
    ThresholdState,
)

WINDOW_SECONDS = 10.0
HISTORY = 300
DISTRIBUTION_BINS = 16
MARKED = frozenset({"pause", "resume", "rate"})
"""Notices marked on the charts (beside phase starts)."""


class _Track:
    """One operation (or the total) on screen: its last window and its charts' history."""

    def __init__(self, window: int, uncorrected: bool) -> None:
        self.window = Window(window)
        self.window_uncorrected = Window(window) if uncorrected else None
        self.recent: deque[tuple[int, float]] = deque(maxlen=window)
        self.history: deque[float] = deque(maxlen=HISTORY)
        self.error_history: deque[float] = deque(maxlen=HISTORY)
        self.samples = {
            "throughput": deque[float](maxlen=HISTORY),
            "p99": deque[float](maxlen=HISTORY),
        }

    def add(
        self, phase: str, op: OpSummary, seconds: float, counts: tuple[Counts | None, ...]
    ) -> None:
        self.window.push(counts[0])
        if self.window_uncorrected is not None:
            self.window_uncorrected.push(counts[1])
        self.recent.append((op.ok, seconds))
        self.history.append(op.throughput)
        self.error_history.append(op.errors / seconds if seconds > 0 else 0.0)
        if phase == "sustain":
            self.samples["throughput"].append(op.throughput)
            if op.latency_us.p99 is not None:
                self.samples["p99"].append(op.latency_us.p99)

    def stats(self, op: str | None, phases: dict[str, PhaseSummary], measured: str) -> OpStats:
        seconds = sum(s for _, s in self.recent)
        latency = {"window": counts_summary(self.window.counts)}
        if self.window_uncorrected is not None:
            latency["window_uncorrected"] = counts_summary(self.window_uncorrected.counts)
        throughput = sum(n for n, _ in self.recent) / seconds if seconds else 0.0
        samples = {metric: tuple(values) for metric, values in self.samples.items()}
        return OpStats.of(op, phases, measured, (throughput, latency), samples)


class RunModel:
    """Folds events into the state behind :class:`RunView`."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.info: RunInfo | None = None
        self.state, self.phase, self.measured_phase = "starting", "", ""
        self.elapsed, self.lag_ms, self.inflight = 0.0, 0.0, 0
        self.paused, self.rate_factor, self.target_gone = False, 1.0, False
        self.tracks: dict[str, _Track] = {}
        self.total: _Track | None = None
        self.phases: dict[str, PhaseSummary] = {}
        """The engine's figures of each phase so far (the report's once it came)."""
        self.verdicts: LiveVerdicts | None = None
        self.times: deque[float] = deque(maxlen=HISTORY)
        self.resources: Resources | None = None
        self.cpu_history = {
            key: deque[float](maxlen=HISTORY) for key in ("generator", "target", "host")
        }
        self.notices: list[Notice] = []
        self.marks: list[tuple[float, str]] = []
        self.worker_lag_ms: dict[int, float] = {}
        self.report: Report | None = None
        self.exit_code: int | None = None
        self.profile: ProfileUpdate | None = None

    def apply(self, event: Event) -> list[Notice]:
        """Fold one event in; return the notices the user should be alerted to."""
        if isinstance(event, RunStarted):
            self.reset()
            self.info = RunInfo.from_started(event)
            self.state = "running"
            window = max(1, round(WINDOW_SECONDS / max(self.info.interval, 1e-3)))
            self.tracks = {op: _Track(window, self.info.open_model) for op in self.info.ops}
            self.total = _Track(window, self.info.open_model)
        elif isinstance(event, PhaseChanged):
            self.marks.append((event.elapsed, event.phase))
            self.phase = event.phase
            self.elapsed = max(self.elapsed, event.elapsed)
        elif isinstance(event, IntervalUpdate):
            self._interval(event)
        elif isinstance(event, ResourceSample):
            self._resources(event)
        elif isinstance(event, ProfileUpdate):
            self.profile = event
        elif isinstance(event, Notice):
            return self._notice(event)
        elif isinstance(event, RunFinished):
            self.state, self.paused = "finished", False
            self.report, self.exit_code = event.report, event.exit_code
            self.phases = dict(event.report.phases)
        return []

    def _interval(self, event: IntervalUpdate) -> None:
        if self.total is None:
            return
        self.elapsed = max(self.elapsed, event.elapsed)
        self.lag_ms, self.inflight, self.worker_lag_ms = (
            event.lag_ms,
            event.inflight,
            event.worker_lag_ms,
        )
        if event.phase_summary is not None:
            self.phases[event.phase] = event.phase_summary
        if event.verdicts is not None:
            self.verdicts = event.verdicts
        if event.phase == "drain":
            return
        self.measured_phase = event.phase
        self.times.append(event.elapsed)
        same_kind = len({op.latency_kind for op in event.ops.values()}) == 1
        total: list[Counts | None] = [None, None]
        for name, op in event.ops.items():
            counts = (counts_of(op.hist or ""), counts_of(op.hist_uncorrected or ""))
            if name in self.tracks:
                self.tracks[name].add(event.phase, op, event.duration, counts)
            if same_kind:  # a total latency only across ops that measure the same thing
                total = [add_counts(into, c) for into, c in zip(total, counts, strict=True)]
        self.total.add(event.phase, event.total, event.duration, tuple(total))

    def _resources(self, event: ResourceSample) -> None:
        self.elapsed = max(self.elapsed, event.elapsed)
        self.resources = Resources(
            event.elapsed, tuple(event.workers), event.target, self.target_gone, event.host
        )
        self.cpu_history["generator"].append(max((w["cpu"] for w in event.workers), default=0.0))
        self.cpu_history["target"].append(event.target["cpu"] if event.target else 0.0)
        self.cpu_history["host"].append(event.host["cpu"])

    def _notice(self, item: Notice) -> list[Notice]:
        """Keep a notice (the engine's word: a gone target is its notice, once)."""
        self.notices.append(item)
        if item.kind in MARKED:
            self.marks.append((item.elapsed, item.kind))
        if item.kind == "target" and "pid" in item.details:
            self.target_gone = True
        elif item.kind == "pause":
            self.paused = True
        elif item.kind == "resume":
            self.paused = False
        elif item.kind == "rate" and isinstance(factor := item.details.get("factor"), int | float):
            self.rate_factor = float(factor)
        return [item]

    def view(self) -> RunView:
        """Compute the immutable picture of the run now."""
        measured = self.measured_phase
        ops = tuple(t.stats(name, self.phases, measured) for name, t in self.tracks.items())
        total = None
        throughput = {name: tuple(t.history) for name, t in self.tracks.items()}
        errors = {name: tuple(t.error_history) for name, t in self.tracks.items()}
        distributions: dict[str, tuple[tuple[float, float, int], ...]] = {}
        if self.total is not None:
            total = self.total.stats(None, self.phases, measured)
            throughput["total"] = tuple(self.total.history)
            errors["total"] = tuple(self.total.error_history)
            windows = {"corrected": self.total.window, "uncorrected": self.total.window_uncorrected}
            for key, window in windows.items():
                if window is not None:
                    distributions[key] = tuple(distribution(window.counts, DISTRIBUTION_BINS))
        cpu = self.report.verdicts if self.report else self.verdicts.cpu if self.verdicts else None
        return RunView(
            state=self.state,
            info=self.info,
            phase=self.phase,
            measured_phase=self.measured_phase,
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
            generator_bound=bool(cpu and cpu.generator_bound),
            generator_reason=cpu.reason if cpu else None,
            host_saturated=bool(cpu and cpu.host_saturated),
            host_reason=cpu.host_reason if cpu else None,
            thresholds=self._thresholds(),
            notices=tuple(self.notices),
            lag_ms=self.lag_ms,
            worker_lag_ms=dict(self.worker_lag_ms),
            profile=self.profile,
            inflight=self.inflight,
            report=self.report,
            exit_code=self.exit_code,
        )

    def _thresholds(self) -> tuple[ThresholdState, ...]:
        """The report's thresholds, else the engine's so far, else each one pending."""
        judged = (
            self.report.thresholds if self.report else self.verdicts and self.verdicts.thresholds
        )
        if self.report is not None and self.report.nothing_measured:
            return tuple(ThresholdState(t.expr, None, None) for t in self.report.thresholds)
        if judged:
            return tuple(ThresholdState(t.expr, t.value, t.ok) for t in judged)
        return (
            tuple(ThresholdState(expr, None, None) for expr in self.info.thresholds)
            if self.info
            else ()
        )


def empty_view() -> RunView:
    """The view before anything happened."""
    return RunModel().view()
