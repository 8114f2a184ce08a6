"""Merging worker reports into intervals and phase totals, exactly.

Each ``STATS`` frame is one worker's interval of one phase. An interval is
complete when every live worker has reported it (or the run ends); it is then
summarised and emitted. Phase totals accumulate every report, so the phase's
percentiles come from the merged histograms of all workers and intervals,
never from averaged percentiles.

The interval series (one record per interval, each with its operations'
encoded histograms) is what a snapshot keeps of the run's course. So that the
controller's memory stays flat however long the run, a phase keeps about
``SERIES_LIMIT`` records (:mod:`~protobench.engine.thinning`): past it, each new
interval merges the oldest adjacent pair of the finest records into one (counts
added, histograms merged exactly), so the recent past stays at full resolution
and older stretches become coarser (2, 4, 8... intervals per record), as in a round-robin database.
Only records covering as many intervals are merged and the newest is left as
it came, so at times a phase holds one record more than the limit.

Each op says what its latency measures (``latency_kind``, from the plugin);
a total shows a latency only when every op measures the same thing (else its
``latency_us`` is empty and ``latency_by_kind`` merges the ops of each kind).
Each op's ``down_s`` is the time its sessions spent without a connection while
they wanted one (the workers' ``down_us`` counter), and ``down_share`` that
time over the op's sessions times the phase's seconds.

A phase runs from where the previous one really ended: the drain of a run
stopped early starts at the stop, not at the planned end of sustain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from hdrh.histogram import HdrHistogram

from protobench.engine.bounds import Tally, lagging
from protobench.engine.events import IntervalUpdate
from protobench.engine.metrics import OpAccumulator, OpInterval, encode, summary
from protobench.engine.report_model import LiveVerdicts
from protobench.engine.series_model import EncodedHistograms, PhaseHistograms, SeriesRecord
from protobench.engine.stats_frame import StatsFrame, StatsWire
from protobench.engine.summaries import MIXED, LatencySummary, OpSummary, PhaseSummary
from protobench.engine.thinning import PHASES, SERIES_LIMIT, pair_to_merge
from protobench.vocab.counters import DOWN_US, ERRORS_PREFIX, OK_TOTAL, streams_per_connection
from protobench.vocab.percentiles import PERCENTILE_KEYS

Judge = Callable[[Mapping[str, PhaseSummary], Tally], LiveVerdicts | None]
"""The verdicts of a run so far: its phases so far and its lagging intervals in sustain."""


def down_figures(acc: OpAccumulator, sessions: int, seconds: float) -> tuple[float, float]:
    """``down_s`` (session-seconds without a connection) and its share of ``sessions × seconds``."""
    down_s = acc.counters.get(DOWN_US, 0) / 1e6
    capacity = sessions * seconds
    share = round(min(down_s / capacity, 1.0), 6) if capacity > 0 else 0.0
    return round(down_s, 3), share


def latency_summary(hist: HdrHistogram) -> LatencySummary:
    """The :class:`LatencySummary` of a histogram (only ``count`` when it is empty)."""
    figures = summary(hist)
    if not figures["count"]:
        return LatencySummary(count=0)
    figures_us = {key: figures[key] for key in (*PERCENTILE_KEYS, "min", "max", "mean", "stddev")}
    return LatencySummary(count=int(figures["count"]), **figures_us)


def op_summary(
    acc: OpAccumulator,
    seconds: float,
    corrected: bool,
    sessions: int = 0,
    kind: str = "round_trip",
) -> OpSummary:
    """The report's figures for one operation (or the total) over ``seconds``.

    ``sessions`` (the op's sessions) scales ``down_share``; ``kind`` is what its
    latency measures (:data:`MIXED` for a total over kinds: no latency then).
    """
    errors = acc.error_count
    attempts = acc.ok + errors
    down_s, down_share = down_figures(acc, sessions, seconds)
    counters = dict(sorted(acc.counters.items()))
    return OpSummary(
        ok=acc.ok,
        errors=errors,
        error_rate=round(errors / attempts, 6) if attempts else 0.0,
        throughput=round(acc.ok / seconds, 3) if seconds > 0 else 0.0,
        bytes_in=acc.bytes_in,
        bytes_out=acc.bytes_out,
        errors_by_class=dict(sorted(acc.errors.items())),
        error_codes=dict(sorted(acc.error_codes.items())),
        last_errors=dict(acc.last_errors),
        late=acc.late,
        out_of_range=acc.out_of_range,
        counters=counters,
        counter_rates={
            name: round(value / seconds, 3) if seconds > 0 else 0.0
            for name, value in counters.items()
        },
        down_s=down_s,
        down_share=down_share,
        streams_per_connection=streams_per_connection(counters),
        latency_kind=kind,
        latency_us=latency_summary(acc.hist) if kind != MIXED else LatencySummary(),
        latency_uncorrected_us=(
            (latency_summary(acc.hist_uncorrected) if kind != MIXED else LatencySummary())
            if corrected
            else None
        ),
        send_lateness_us=(
            latency_summary(acc.hist_lateness) if acc.hist_lateness.get_total_count() else None
        ),
        generator_delay_us=(
            latency_summary(acc.hist_delay) if acc.hist_delay.get_total_count() else None
        ),
    )


def total_summary(
    accs: Mapping[str, OpAccumulator],
    kinds: Mapping[str, str],
    sessions: Mapping[str, int],
    seconds: float,
    corrected: bool,
) -> OpSummary:
    """The figures of all ops merged; latencies only across ops of one kind."""
    total = OpAccumulator()
    by_kind: dict[str, OpAccumulator] = {}
    for name, acc in accs.items():
        total.absorb(acc)
        by_kind.setdefault(kinds.get(name, "round_trip"), OpAccumulator()).absorb(acc)
    named = {kinds.get(name, "round_trip") for name in sessions} | set(by_kind)
    kind = named.pop() if len(named) == 1 else MIXED
    data = op_summary(total, seconds, corrected, sum(sessions.values()), kind)
    if kind != MIXED:
        return data
    by = {k: latency_summary(acc.hist) for k, acc in sorted(by_kind.items())}
    return replace(data, latency_by_kind=by)


def phase_summary(
    accs: Mapping[str, OpAccumulator],
    op_names: Sequence[str],
    seconds: float,
    start: float,
    corrected: bool,
    sessions: Mapping[str, int],
    kinds: Mapping[str, str],
) -> PhaseSummary:
    """A phase's figures from its accumulators: its start and end in the run, total and ops.

    The one computation of a phase, for the report, each interval's phase so
    far, and a replay (which rebuilds the accumulators from a snapshot's series).
    """
    ops = {
        name: op_summary(
            accs.get(name, OpAccumulator()),
            seconds,
            corrected,
            sessions.get(name, 0),
            kinds.get(name, "round_trip"),
        )
        for name in op_names
    }
    return PhaseSummary(
        duration_s=round(seconds, 3),
        start_s=round(start, 3),
        end_s=round(start + seconds, 3),
        total=total_summary(accs, kinds, sessions, seconds, corrected),
        ops=ops,
    )


def interval_of(summary: OpSummary) -> OpInterval:
    """An operation's figures from a series record (an :func:`op_summary` plus histograms)."""
    return OpInterval(
        ok=summary.ok,
        errors=dict(summary.errors_by_class),
        error_codes=dict(summary.error_codes),
        last_errors=dict(summary.last_errors or {}),
        bytes_in=summary.bytes_in,
        bytes_out=summary.bytes_out,
        late=summary.late,
        out_of_range=summary.out_of_range,
        counters=dict(summary.counters),
        hist=summary.hist or "",
        hist_uncorrected=summary.hist_uncorrected or "",
        hist_delay=summary.hist_delay or "",
    )


def series_ops(
    accs: dict[str, OpAccumulator],
    names: list[str],
    seconds: float,
    corrected: bool,
    sessions: Mapping[str, int] | None = None,
    kinds: Mapping[str, str] | None = None,
) -> dict[str, OpSummary]:
    """The ``ops`` of an interval: each op's summary with its encoded histograms."""
    ops = {}
    for name in names:
        acc = accs.get(name, OpAccumulator())
        op = op_summary(
            acc,
            seconds,
            corrected,
            (sessions or {}).get(name, 0),
            (kinds or {}).get(name, "round_trip"),
        )
        unc, delay = acc.hist_uncorrected, acc.hist_delay
        ops[name] = replace(
            op,
            last_errors=op.last_errors or None,
            hist=encode(acc.hist) if acc.ok else "",
            hist_uncorrected=(encode(unc) if unc.get_total_count() else "") if corrected else None,
            hist_delay=encode(delay) if delay.get_total_count() else None,
        )
    return ops


def merge_records(
    first: SeriesRecord,
    second: SeriesRecord,
    corrected: bool,
    sessions: Mapping[str, int] | None = None,
) -> SeriesRecord:
    """One series record covering two adjacent ones of the same phase, merged exactly."""
    seconds = first.duration + second.duration
    names = list(dict.fromkeys([*first.ops, *second.ops]))
    accs: dict[str, OpAccumulator] = {}
    kinds: dict[str, str] = {}
    for name in names:
        acc = accs[name] = OpAccumulator()
        for record in (first, second):
            if (op := record.ops.get(name)) is not None:
                acc.add(interval_of(op))
                kinds[name] = op.latency_kind
    lags = {
        w: max(first.worker_lag_ms.get(w, 0.0), second.worker_lag_ms.get(w, 0.0))
        for w in {**first.worker_lag_ms, **second.worker_lag_ms}
    }
    return SeriesRecord(
        phase=first.phase,
        index=first.index,
        elapsed=second.elapsed,
        duration=round(seconds, 6),
        lag_ms=max(first.lag_ms, second.lag_ms),
        inflight=second.inflight,
        worker_lag_ms=dict(sorted(lags.items())),
        ops=series_ops(accs, names, seconds, corrected, sessions, kinds),
    )


@dataclass
class _Bucket:
    t0: float = 0.0
    t1: float = 0.0
    reported: set[int] = field(default_factory=set)
    ops: dict[str, OpAccumulator] = field(default_factory=dict)
    lag_ms: float = 0.0
    worker_lag_ms: dict[int, float] = field(default_factory=dict)
    inflight: int = 0


class Aggregator:
    """Interval series and phase totals of one run.

    ``phase_offsets`` are the planned starts of the phases (seconds into the
    run); ``sessions`` and ``kinds`` give each op's sessions and latency kind.
    """

    def __init__(
        self,
        op_names: list[str],
        corrected: bool,
        phase_offsets: dict[str, float],
        sessions: Mapping[str, int] | None = None,
        kinds: Mapping[str, str] | None = None,
        judge: Judge | None = None,
    ):
        self.op_names = op_names
        self.corrected = corrected
        self.phase_offsets = phase_offsets
        self.sessions = {name: (sessions or {}).get(name, 0) for name in op_names}
        self.kinds = {name: (kinds or {}).get(name, "round_trip") for name in op_names}
        self.live: set[int] = set()
        self._pending: dict[tuple[str, int], _Bucket] = {}
        self.totals: dict[str, dict[str, OpAccumulator]] = {}
        self.durations: dict[str, float] = {}
        self.series: list[SeriesRecord] = []
        self._phases: list[str] = []
        """The phase of each series record."""
        self._weights: list[int] = []
        """How many intervals each series record covers."""
        self.series_limit = SERIES_LIMIT
        self.lagging: dict[str, Tally] = {}
        """Per phase: intervals, and those whose event-loop lag reached the bound."""
        self.judge = judge
        """Judges each interval's run so far (the thresholds, checks and CPU verdict)."""
        self._so_far: dict[str, PhaseSummary] = {}

    def add(self, wire: StatsWire) -> list[IntervalUpdate]:
        """Take one worker's ``STATS`` payload (decoded here, once); return the intervals it
        completed."""
        frame = StatsFrame.decode(wire)
        key = (frame.phase, frame.index)
        bucket = self._pending.setdefault(key, _Bucket(frame.t0, frame.t1))
        bucket.t1 = max(bucket.t1, frame.t1)
        bucket.reported.add(frame.worker)
        bucket.lag_ms = max(bucket.lag_ms, frame.lag_ms)
        bucket.worker_lag_ms[frame.worker] = frame.lag_ms
        bucket.inflight += frame.inflight
        for name, item in frame.ops.items():
            bucket.ops.setdefault(name, OpAccumulator()).add(item)
        return self._complete(force=False)

    def worker_gone(self, worker: int) -> list[IntervalUpdate]:
        self.live.discard(worker)
        return self._complete(force=False)

    def finish(self) -> list[IntervalUpdate]:
        return self._complete(force=True)

    def _complete(self, force: bool) -> list[IntervalUpdate]:
        done = []
        for key in sorted(self._pending, key=lambda k: (PHASES.index(k[0]), k[1])):
            bucket = self._pending[key]
            if force or self.live <= bucket.reported:
                done.append(self._emit(key, self._pending.pop(key)))
        return done

    def phase_start(self, phase: str) -> float:
        """Where ``phase`` began, in seconds into the run: the drain at the real end of the
        phase before it (a stopped run's drain starts at the stop)."""
        if phase != "drain":
            return self.phase_offsets.get(phase, 0.0)
        ends = [self.phase_start(p) + self.durations[p] for p in PHASES[:2] if p in self.durations]
        return max(ends) if ends else self.phase_offsets.get("drain", 0.0)

    def _emit(self, key: tuple[str, int], bucket: _Bucket) -> IntervalUpdate:
        phase, index = key
        seconds = max(bucket.t1 - bucket.t0, 1e-9)
        self.durations[phase] = max(self.durations.get(phase, 0.0), bucket.t1)
        totals = self.totals.setdefault(phase, {})
        for name, acc in bucket.ops.items():
            totals.setdefault(name, OpAccumulator()).absorb(acc)
        self.lagging.setdefault(phase, Tally()).add(lagging(bucket.lag_ms))
        ops = series_ops(
            bucket.ops, self.op_names, seconds, self.corrected, self.sessions, self.kinds
        )
        so_far = self._so_far[phase] = self._phase(phase, totals)
        update = IntervalUpdate(
            phase=phase,
            index=index,
            elapsed=round(self.phase_start(phase) + bucket.t1, 6),
            duration=round(seconds, 6),
            ops=ops,
            total=total_summary(bucket.ops, self.kinds, self.sessions, seconds, self.corrected),
            lag_ms=bucket.lag_ms,
            inflight=bucket.inflight,
            worker_lag_ms=dict(sorted(bucket.worker_lag_ms.items())),
            phase_summary=so_far,
            verdicts=(
                self.judge(self._so_far, self.lagging.get("sustain", Tally()))
                if self.judge is not None
                else None
            ),
        )
        self.series.append(
            SeriesRecord(
                phase=phase,
                index=index,
                elapsed=update.elapsed,
                duration=update.duration,
                lag_ms=bucket.lag_ms,
                inflight=bucket.inflight,
                worker_lag_ms=update.worker_lag_ms,
                ops=ops,
            )
        )
        self._phases.append(phase)
        self._weights.append(1)
        at = pair_to_merge(self._phases, self._weights, phase, self.series_limit)
        if at is not None:
            self.series[at : at + 2] = [
                merge_records(self.series[at], self.series[at + 1], self.corrected, self.sessions)
            ]
            self._phases[at : at + 2] = [phase]
            self._weights[at : at + 2] = [self._weights[at] + self._weights[at + 1]]
        return update

    def _phase(self, phase: str, accs: Mapping[str, OpAccumulator]) -> PhaseSummary:
        return phase_summary(
            accs,
            self.op_names,
            self.durations.get(phase, 0.0),
            self.phase_start(phase),
            self.corrected,
            self.sessions,
            self.kinds,
        )

    def phase_report(self, phase: str) -> PhaseSummary | None:
        """The report section of a phase: its real start and end, total and per-op figures."""
        accs = self.totals.get(phase)
        return None if accs is None else self._phase(phase, accs)

    def phases(self) -> dict[str, PhaseSummary]:
        """The report's phases, in run order (those that measured something)."""
        return {
            phase: summary for phase in PHASES if (summary := self.phase_report(phase)) is not None
        }

    def counter_totals(self) -> dict[str, dict[str, int]]:
        """Each op's counters summed over sustain and drain (what a plugin diagnoses), with
        its exchanges: ``ok`` and ``errors:CLASS`` (see ``ProtocolPlugin.diagnose``)."""
        out: dict[str, dict[str, int]] = {name: {} for name in self.op_names}
        for phase in ("sustain", "drain"):
            for name, acc in self.totals.get(phase, {}).items():
                counters = out.setdefault(name, {})
                counted = [(OK_TOTAL, acc.ok), *acc.counters.items()]
                counted += [(f"{ERRORS_PREFIX}{cls}", n) for cls, n in acc.errors.items()]
                for key, value in counted:
                    counters[key] = counters.get(key, 0) + value
        return out

    def phase_histograms(self) -> PhaseHistograms:
        """Encoded histograms per phase and op, for the snapshot.

        ``hist_uncorrected`` only in the open model, as in the series and the report: a
        periodic group of a closed run measures from the actual send too, but that is
        no run's uncorrected latency (a ``TOTAL`` of it would be that group's alone).
        """
        out: PhaseHistograms = {}
        for phase, accs in self.totals.items():
            out[phase] = {}
            for name, acc in accs.items():
                item = acc.to_interval()
                hists = EncodedHistograms(hist=item.hist)
                if self.corrected:
                    hists["hist_uncorrected"] = item.hist_uncorrected
                if item.hist_delay:
                    hists["hist_delay"] = item.hist_delay
                out[phase][name] = hists
        return out
