"""A saved run as the events the engine emitted, for a replay.

:func:`replay_timeline` turns a snapshot into ``(run time, event)`` pairs,
from ``RunStarted`` to ``RunFinished`` (the typed
:class:`~protobench.snapshots.model.Snapshot` the store reads). Each interval carries what the
live engine's carried, computed by the same code: its phase so far
(:func:`protobench.engine.aggregate.phase_summary` over the phase's
accumulators, rebuilt from the series records) and the verdicts so far
(:class:`protobench.engine.report.RunJudge`, on the resource samples recorded
before it). A live run and its replay thus show the same figures; the
monitor adds none of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

from protobench.engine.aggregate import interval_of, phase_summary, total_summary
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
from protobench.engine.metrics import OpAccumulator
from protobench.engine.plan import RunPlan
from protobench.engine.report import RunJudge, exit_code_for
from protobench.engine.report_model import Report, to_plain
from protobench.engine.resource_log import ResourceLog, ResourceRecord
from protobench.engine.series_model import SeriesRecord
from protobench.engine.summaries import PhaseSummary
from protobench.protocols import registry
from protobench.snapshots.model import Snapshot
from protobench.tui.replay_start import started

ORDER = {RunStarted: 0, IntervalUpdate: 1, Notice: 2, ResourceSample: 3, PhaseChanged: 4}
"""At one run time: a notice before the sample that shows it (as the controller sends them)."""


class _Phases:
    """The run so far, as the engine's aggregator holds it: each phase's accumulators."""

    def __init__(self, plan: RunPlan, report: Report, judge: RunJudge) -> None:
        self.names = [g.name for g in plan.groups]
        self.sessions = {g.name: g.count for g in plan.groups}
        self.kinds: dict[str, str] = {}
        self.corrected = plan.model == "open"
        offsets = {"warmup": 0.0, "sustain": plan.warmup, "drain": plan.warmup + plan.duration}
        real = {p: s.start_s for p, s in report.phases.items() if s.start_s is not None}
        self.starts = {**offsets, **real}
        self.accs: dict[str, dict[str, OpAccumulator]] = {}
        self.seconds: dict[str, float] = {}
        self.so_far: dict[str, PhaseSummary] = {}
        self.lagging = Tally()
        self.judge = judge

    def interval(self, record: SeriesRecord) -> IntervalUpdate:
        """The engine's event of a series record: the record, its phase so far, the verdicts."""
        phase = record.phase
        accs = self.accs.setdefault(phase, {})
        interval: dict[str, OpAccumulator] = {}
        for name, op in record.ops.items():
            self.kinds.setdefault(name, op.latency_kind)
            interval[name] = OpAccumulator()
            interval[name].add(interval_of(op))
            accs.setdefault(name, OpAccumulator()).absorb(interval[name])
        start = self.starts.get(phase, 0.0)
        seconds = self.seconds[phase] = max(self.seconds.get(phase, 0.0), record.elapsed - start)
        args = (self.sessions, self.kinds)
        self.so_far[phase] = phase_summary(accs, self.names, seconds, start, self.corrected, *args)
        if phase == "sustain":
            self.lagging.add(lagging(record.lag_ms))
        return IntervalUpdate(
            phase=phase,
            index=record.index,
            elapsed=record.elapsed,
            duration=record.duration,
            ops=record.ops,
            total=total_summary(
                interval, self.kinds, self.sessions, record.duration, self.corrected
            ),
            lag_ms=record.lag_ms,
            inflight=record.inflight,
            worker_lag_ms=record.worker_lag_ms,
            phase_summary=self.so_far[phase],
            verdicts=self.judge(self.so_far, self.lagging),
        )


def replay_timeline(snapshot: Snapshot) -> list[tuple[float, Event]]:
    """A snapshot's events in run-time order, from ``RunStarted`` to ``RunFinished``."""
    report = snapshot.report
    plan = RunPlan.from_dict(dict(snapshot.plan))
    resources = ResourceLog()
    passive = registry.load(plan.protocol).passive_ops
    judge = RunJudge.of(plan, resources, frozenset(g.name for g in plan.groups if g.op in passive))
    phases = _Phases(plan, report, judge)
    series = snapshot.series
    start = started({"plan": snapshot.plan, "report": to_plain(snapshot.report)})
    assert start is not None, "a checked snapshot's start reads"
    timed: list[tuple[float, Event]] = [(0.0, start)]
    for phase in dict.fromkeys(record.phase for record in series):
        timed.append((phases.starts.get(phase, 0.0), PhaseChanged(phase, phases.starts[phase])))
    samples = _samples(snapshot.resources)
    pending = next(samples, None)
    for record in series:
        while pending is not None and pending["elapsed"] < record.elapsed:
            resources.add(pending)  # the samples the engine had when it sent the interval
            timed.append((pending["elapsed"], _sample(pending)))
            pending = next(samples, None)
        timed.append((record.elapsed, phases.interval(record)))
    while pending is not None:
        timed.append((pending["elapsed"], _sample(pending)))
        pending = next(samples, None)
    for notice in report.notices:
        timed.append(
            (notice.elapsed, Notice(notice.kind, notice.message, notice.elapsed, notice.details))
        )
    timed.sort(key=lambda pair: (pair[0], ORDER[type(pair[1])]))
    end = timed[-1][0] if timed else 0.0
    timed.append((end, RunFinished(report, exit_code_for(report))))
    return timed


def _samples(samples: list[ResourceRecord]) -> Iterator[ResourceRecord]:
    return iter(sorted(samples, key=lambda sample: sample["elapsed"]))


def _sample(sample: ResourceRecord) -> ResourceSample:
    return ResourceSample(sample["elapsed"], sample["workers"], sample["target"], sample["host"])
