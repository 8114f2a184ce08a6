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

import math
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING

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
from protobench.engine.figures import error_keys
from protobench.engine.report_model import LiveVerdicts, Report
from protobench.engine.summaries import LatencySummary, OpSummary, PhaseSummary
from protobench.tui.view import (
    OpStats,
    Resources,
    RunInfo,
    RunView,
    ThresholdState,
)

if TYPE_CHECKING:
    from protobench.engine.metrics import Counts
    from protobench.tui.latency import Window

WINDOW_SECONDS = 10.0
HISTORY = 300
DISTRIBUTION_BINS = 16
MARKED = frozenset({"pause", "resume", "rate"})
"""Notices marked on the charts (beside phase starts)."""
SHORT = 0.5
"""An interval shorter than this share of the plan's interval (a phase's last one, the one a
stop cut) is merged into the chart point before it: a few samples over a fraction of an
interval would read as a drop (or a spike) at the end of a run."""
CHARTED = ("p50", "p99", "p999")
"""The percentiles kept per interval for the latency chart (corrected and ``_uncorrected``)."""
CODES = 16
"""Error codes followed over time per op (and the total); others add up under ``other``."""
OTHER = "other"


class _Point:
    """What one chart point sums: one interval, or a short one merged into its predecessor."""

    __slots__ = ("codes", "counts", "errors", "ok", "seconds")

    def __init__(self, op: OpSummary, seconds: float, counts: tuple[Counts | None, ...]) -> None:
        self.ok, self.errors, self.seconds = op.ok, op.errors, seconds
        self.codes = error_keys(op.errors_by_class, op.error_codes)
        self.counts = counts

    def absorb(self, op: OpSummary, seconds: float, counts: tuple[Counts | None, ...]) -> None:
        from protobench.tui.latency import add_counts  # noqa: PLC0415 - numpy: see _Track.add

        self.ok += op.ok
        self.errors += op.errors
        self.seconds += seconds
        for code, n in error_keys(op.errors_by_class, op.error_codes).items():
            self.codes[code] = self.codes.get(code, 0) + n
        self.counts = tuple(
            add_counts(None if mine is None else mine.copy(), theirs)
            for mine, theirs in zip(self.counts, counts, strict=True)
        )

    def rate(self, n: float) -> float:
        return n / self.seconds if self.seconds > 0 else 0.0


class _Track:
    """One operation (or the total) on screen: its last window and its charts' history.

    Every history holds one value per chart point, aligned with the model's
    ``times``; a latency percentile of a point without samples is NaN (no dot).
    """

    def __init__(self, window: int, uncorrected: bool) -> None:
        self.size = window
        self.uncorrected = uncorrected
        self.window: Window | None = None
        self.window_uncorrected: Window | None = None
        """The last window's histograms, made with the first interval (numpy loads then)."""
        self.recent: deque[tuple[int, float]] = deque(maxlen=window)
        self.history: deque[float] = deque(maxlen=HISTORY)
        self.error_history: deque[float] = deque(maxlen=HISTORY)
        self.latency = {
            key + kind: deque[float](maxlen=HISTORY)
            for key in CHARTED
            for kind in ("", "_uncorrected")
        }
        self.codes: dict[str, deque[float]] = {}
        """Errors per second of each ``class:code`` (a bare class for errors without a code;
        at most :data:`CODES`, then ``other``)."""
        self.samples = {
            "throughput": deque[float](maxlen=HISTORY),
            "p99": deque[float](maxlen=HISTORY),
        }
        self.point: _Point | None = None

    def add(
        self,
        phase: str,
        op: OpSummary,
        seconds: float,
        counts: tuple[Counts | None, ...],
        merge: bool,
    ) -> None:
        """One interval: into the window, and a new chart point (or merged into the last)."""
        # numpy (through the histograms' counts) loads with the first interval, after the
        # monitor's first frame
        from protobench.tui.latency import Window  # noqa: PLC0415

        if self.window is None:
            self.window = Window(self.size)
            self.window_uncorrected = Window(self.size) if self.uncorrected else None
        self.window.push(counts[0])
        if self.window_uncorrected is not None:
            self.window_uncorrected.push(counts[1])
        self.recent.append((op.ok, seconds))
        if phase == "sustain":
            self.samples["throughput"].append(op.throughput)
            if op.latency_us.p99 is not None:
                self.samples["p99"].append(op.latency_us.p99)
        if merge and self.point is not None:
            self.point.absorb(op, seconds, counts)
            self._chart(self.point, self._merged_latency(self.point), replace=True)
        else:
            self.point = _Point(op, seconds, counts)
            latency = (op.latency_us, op.latency_uncorrected_us or LatencySummary())
            self._chart(self.point, latency, replace=False)

    @staticmethod
    def _merged_latency(point: _Point) -> tuple[LatencySummary, LatencySummary]:
        from protobench.engine.metrics import counts_summary  # noqa: PLC0415 - as in add

        out = []
        for counts in point.counts:
            figures = counts_summary(counts) if counts is not None else {}
            out.append(
                LatencySummary(
                    p50=figures.get("p50"), p99=figures.get("p99"), p999=figures.get("p999")
                )
            )
        return out[0], out[1]

    def _chart(
        self, point: _Point, latency: tuple[LatencySummary, LatencySummary], replace: bool
    ) -> None:
        values: dict[str, float] = {}
        for key in CHARTED:
            for kind, figures in zip(("", "_uncorrected"), latency, strict=True):
                value = figures.value(key)
                values[key + kind] = math.nan if value is None else value
        series: list[tuple[deque[float], float]] = [
            (self.history, point.rate(point.ok)),
            (self.error_history, point.rate(point.errors)),
            *((self.latency[key], value) for key, value in values.items()),
            *((line, point.rate(n)) for line, n in self._code_counts(point.codes)),
        ]
        for line, value in series:
            if replace and line:
                line[-1] = value
            else:
                line.append(value)

    def _code_counts(self, codes: Mapping[str, int]) -> list[tuple[deque[float], int]]:
        """Each followed code's line and its count in ``codes``; a new code gets a line of
        zeros as long as the others before the point being charted."""
        counts: dict[str, int] = dict.fromkeys(self.codes, 0)
        for each, n in codes.items():
            code = each if each in self.codes or len(self.codes) < CODES else OTHER
            if code not in self.codes:
                self.codes[code] = deque([0.0] * len(self.history), maxlen=HISTORY)
            counts[code] = counts.get(code, 0) + n
        return [(self.codes[code], n) for code, n in counts.items()]

    def stats(self, op: str | None, phases: dict[str, PhaseSummary], measured: str) -> OpStats:
        seconds = sum(s for _, s in self.recent)
        latency: dict[str, dict[str, float]] = {}
        if self.window is not None:
            from protobench.engine.metrics import counts_summary  # noqa: PLC0415 - as in add

            latency["window"] = counts_summary(self.window.counts)
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
        from protobench.tui.latency import add_counts, counts_of  # noqa: PLC0415 - _Track.add

        merge = (
            event.phase == self.measured_phase
            and bool(self.times)
            and self.info is not None
            and event.duration < SHORT * self.info.interval
        )
        self.measured_phase = event.phase
        if merge:
            self.times[-1] = event.elapsed
        else:
            self.times.append(event.elapsed)
        same_kind = len({op.latency_kind for op in event.ops.values()}) == 1
        total: list[Counts | None] = [None, None]
        for name, op in event.ops.items():
            counts = (counts_of(op.hist or ""), counts_of(op.hist_uncorrected or ""))
            if name in self.tracks:
                self.tracks[name].add(event.phase, op, event.duration, counts, merge)
            if same_kind:  # a total latency only across ops that measure the same thing
                total = [add_counts(into, c) for into, c in zip(total, counts, strict=True)]
        self.total.add(event.phase, event.total, event.duration, tuple(total), merge)

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
        tracks = {**self.tracks, **({"total": self.total} if self.total is not None else {})}
        throughput = {name: tuple(t.history) for name, t in tracks.items()}
        errors = {name: tuple(t.error_history) for name, t in tracks.items()}
        latency = {
            name: {key: tuple(line) for key, line in t.latency.items()}
            for name, t in tracks.items()
        }
        codes = {
            name: {code: tuple(line) for code, line in t.codes.items()}
            for name, t in tracks.items()
        }
        distributions: dict[str, tuple[tuple[float, float, int], ...]] = {}
        if self.total is not None:
            total = self.total.stats(None, self.phases, measured)
            windows = {"corrected": self.total.window, "uncorrected": self.total.window_uncorrected}
            for key, window in windows.items():
                if window is not None:
                    from protobench.tui.latency import distribution  # noqa: PLC0415 - _Track.add

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
            latency_history=latency,
            error_code_history=codes,
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
