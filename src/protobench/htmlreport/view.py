"""A snapshot, read once into the plain series and tables the HTML report draws.

This is the only module of the report that reads a snapshot: its keys
(``protobench.snapshot/1``) and its typed report (loaded once, by
:func:`~protobench.snapshots.store.read`); the charts and the page take a
:class:`RunView`. Counters, error codes and provenance are read generically,
so a field the engine adds later appears without a change here; every value
becomes plain text (no JSON, no Python ``True``). Times are seconds since the
run's start, latencies microseconds, rates per second.

The time series leave out partial intervals (shorter than :data:`WHOLE` of the
plan's interval: usually the run's first and last), which would show as drops.
The percentile spectra come from the merged phase histograms: ``TOTAL``'s
merges every operation's, its uncorrected one only when every operation has
one (:func:`~protobench.snapshots.series.has_uncorrected`), and there is no
``TOTAL`` spectrum when the operations' latencies measure different things.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from protobench.engine.figures import rate_changes
from protobench.engine.rates import ramped_rate, rate_shares
from protobench.engine.report_model import (
    Report,
    describe_clock,
    describe_connections,
    describe_model,
)
from protobench.engine.stacks.model import TargetProfile
from protobench.engine.summaries import EMPTY_OP, MIXED, LatencySummary, OpSummary
from protobench.htmlreport.verdict import Card, Verdict, cards, verdict
from protobench.redaction import redact_value
from protobench.snapshots.model import Snapshot
from protobench.snapshots.series import (
    TOTAL,
    Interval,
    has_uncorrected,
    intervals,
    phase_histogram,
)
from protobench.vocab.counters import streams_per_connection, without_stream_samples
from protobench.vocab.percentiles import PERCENTILE_KEYS, PERCENTILE_LABELS
from protobench.vocab.thresholds import format_value

PERCENTILES = (*PERCENTILE_KEYS, "max")
LABELS = {**PERCENTILE_LABELS, "max": "max"}
"""How each of :data:`PERCENTILES` is shown (``p999`` as ``p99.9``)."""
SPECTRUM_STEPS = 10
"""Points per decade of the spectrum's ``1 / (1 - p)`` axis."""
SPECTRUM_NINES = 5
"""The spectrum goes to 99.999%."""
MOST_CODES = 8
"""Error codes drawn one by one; the others are summed."""
MOST_COUNTERS = 12
"""Protocol counters drawn (those of the largest totals)."""
WHOLE = 0.9
"""An interval shorter than this share of the plan's interval is partial: left out of the
time series (a rate over a sliver of a second, a drop that is not one)."""


@dataclass(frozen=True)
class OpSeries:
    """One operation's (or ``TOTAL``'s) figures per interval, in run order.

    ``t0``/``t`` are each interval's start and end; ``errors`` are per second
    by code (``class:code``), the errors of a class without a code under the
    class; ``offered`` is the open model's rate asked of the operation
    (``None`` in the closed model or when it is not paced by the rate);
    ``delay`` the generator's own delay (p50, p99) in taking up replies, measured
    with the kernel's clock (``None`` without it); ``streams`` HTTP/2's streams in
    flight per connection.
    """

    name: str
    t0: list[float]
    t: list[float]
    ok_rate: list[float]
    error_rate: list[float]
    latency: dict[str, list[float | None]]
    errors: dict[str, list[float]]
    counters: dict[str, list[float]]
    offered: list[float] | None = None
    delay: dict[str, list[float | None]] | None = None
    streams: list[float | None] | None = None
    """HTTP/2: the streams in flight per connection in each interval (``None`` when none was
    sampled); its sample counters are not among ``counters``."""


@dataclass(frozen=True)
class Spectrum:
    """An operation's sustain latency by percentile: ``(percentile, µs)`` points.

    ``note`` says why there are none (no latency, or latencies of different kinds);
    ``delay`` is the generator's own delay by percentile (kernel clock), not in the latency.
    """

    name: str
    corrected: list[tuple[float, float]]
    uncorrected: list[tuple[float, float]] | None
    note: str = ""
    delay: list[tuple[float, float]] | None = None


@dataclass(frozen=True)
class Mark:
    """Something to mark on the time axis: a phase or a pause (a span), a rate change, a notice."""

    kind: str
    start: float
    end: float | None
    label: str


@dataclass(frozen=True)
class Resources:
    """The resource samples: CPU in % of one core, memory in bytes."""

    t: list[float]
    worker_cpu: dict[str, list[float | None]]
    target: dict[str, list[float | None]]
    host: dict[str, list[float | None]]


@dataclass(frozen=True)
class RunView:
    """Everything the report page shows of one run."""

    id: str
    title: str
    facts: list[tuple[str, str]]
    open_model: bool
    verdict: Verdict
    cards: list[Card]
    ops: list[OpSeries]
    spectra: list[Spectrum]
    marks: list[Mark]
    resources: Resources
    summary: list[dict[str, str]]
    provenance: list[tuple[str, str]]
    notices: list[str] = field(default_factory=list)
    left_out: str = ""
    """Which intervals the time series leave out, in a sentence ("" when none)."""
    profile: TargetProfile | None = None
    """The target's sampled stacks (``run --profile-target``), and what sampling cost."""
    profile_overhead: str = ""


def text(value: Any) -> str:
    """A field's value as one line a person reads: lists joined, mappings as ``k=v``."""
    value = redact_value(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={text(item)}" for key, item in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(text(item) for item in value) or "-"
    return str(value)


def _rate(value: float, seconds: float) -> float:
    return value / seconds if seconds > 0 else 0.0


def _error_keys(figures: OpSummary) -> dict[str, int]:
    """Errors by code; a class's errors without a code under the class's name."""
    out = dict(figures.error_codes)
    for cls, count in figures.errors_by_class.items():
        coded = sum(n for key, n in figures.error_codes.items() if key.split(":", 1)[0] == cls)
        if count > coded:
            out[cls] = count - coded
    return out


def op_series(
    items: Sequence[Interval],
    names: Sequence[str],
    offered: Mapping[str, list[float]] | None = None,
) -> list[OpSeries]:
    """Per interval of every phase: ``TOTAL`` first, then each operation of ``names``.

    ``TOTAL`` has no latency where the operations' latencies are of different kinds
    (:func:`~protobench.snapshots.series.total_of`).
    ``offered``: the open model's rate asked of each paced operation per interval
    (:func:`offered_rates`); ``TOTAL``'s is their sum.
    """
    offered = dict(offered or {})
    if offered:
        offered[TOTAL] = [sum(values) for values in zip(*offered.values(), strict=True)]
    out = []
    for name in [TOTAL, *names]:
        t0: list[float] = []
        t: list[float] = []
        ok: list[float] = []
        err: list[float] = []
        latency: dict[str, list[float | None]] = {p: [] for p in PERCENTILES}
        errors: dict[str, list[float]] = {}
        counters: dict[str, list[float]] = {}
        delay: dict[str, list[float | None]] = {"p50": [], "p99": []}
        streams: list[float | None] = []
        for index, item in enumerate(items):
            figures = item.ops.get(name, EMPTY_OP)
            t0.append(item.start)
            t.append(item.end)
            ok.append(_rate(figures.ok, item.duration))
            err.append(_rate(figures.errors, item.duration))
            measured = figures.latency_us if figures.ok else LatencySummary()
            for p in PERCENTILES:
                latency[p].append(measured.value(p))
            ours = figures.generator_delay_us or LatencySummary()
            for p, column in delay.items():
                column.append(ours.value(p))
            _append(errors, _error_keys(figures), index, item.duration)
            streams.append(streams_per_connection(figures.counters))
            _append(counters, without_stream_samples(figures.counters), index, item.duration)
        errors = _most(errors, MOST_CODES, lambda n: f"{n} other codes")
        counters = _most(counters, MOST_COUNTERS)
        measured_delay = delay if any(v is not None for v in delay["p99"]) else None
        sampled = streams if any(v is not None for v in streams) else None
        out.append(
            OpSeries(
                name,
                t0,
                t,
                ok,
                err,
                latency,
                errors,
                counters,
                offered.get(name),
                measured_delay,
                sampled,
            )
        )
    return out


def _most(
    columns: dict[str, list[float]], most: int, rest: Callable[[int], str] | None = None
) -> dict[str, list[float]]:
    """The ``most`` columns of the largest sums, largest first (a chart has room for so
    many, a page stays small whatever a server sends); the others summed under ``rest(n)``,
    or left out."""
    ranked = sorted(columns, key=lambda key: -sum(columns[key]))
    if len(ranked) <= most:
        return {key: columns[key] for key in ranked}
    if rest is None:
        return {key: columns[key] for key in ranked[:most]}
    kept = {key: columns[key] for key in ranked[: most - 1]}
    others = ranked[most - 1 :]
    kept[rest(len(others))] = [sum(v) for v in zip(*(columns[k] for k in others), strict=True)]
    return kept


def _append(
    columns: dict[str, list[float]], values: Mapping[str, int], index: int, seconds: float
) -> None:
    """Add one interval's per-second values; a key first seen late gets zeros before."""
    for key in values:
        columns.setdefault(key, [0.0] * index)
    for key, column in columns.items():
        column.append(_rate(float(values.get(key, 0)), seconds))


@dataclass(frozen=True)
class _Group:
    name: str
    every: float | None
    share: float
    count: int


def _groups(plan: Mapping[str, Any]) -> list[_Group]:
    out = []
    for group in plan.get("groups", []):
        count = int(group.get("count", 1) or 1)
        every = group.get("every")
        share = group.get("share")
        out.append(
            _Group(
                group["name"],
                float(every) if every else None,
                float(share) if share else float(count),
                count,
            )
        )
    return out


@dataclass(frozen=True)
class _Schedule:
    """The open model's rate over the run as the plan and the notices say it was asked."""

    rate: float
    ramp_to: float
    ramp_seconds: float
    changes: list[tuple[float, float]]
    """(elapsed, live rate factor) of each rate change, in order."""
    paused: list[tuple[float, float]]

    def factor(self, at: float) -> float:
        if any(start <= at < stop for start, stop in self.paused):
            return 0.0
        value = 1.0
        for when, factor in self.changes:
            if when <= at:
                value = factor
        return value

    def ramped(self, at: float) -> float:
        """The ramp's rate at ``at``: it stands still while paused, as the schedule does."""
        waited = sum(max(0.0, min(at, stop) - start) for start, stop in self.paused)
        return ramped_rate(self.rate, self.ramp_to, self.ramp_seconds, at - waited)

    def mean(self, start: float, stop: float, fixed: float | None = None) -> float:
        """The mean rate over [start, stop] (``fixed``: a periodic group's, not ramped).

        Linear between the changes, so each piece's mean is its midpoint's rate.
        """
        cuts = {at for at, _ in self.changes} | {x for span in self.paused for x in span}
        points = [start, *sorted(c for c in cuts if start < c < stop), stop]
        total = 0.0
        for a, b in itertools.pairwise(points):
            mid = (a + b) / 2
            level = self.ramped(mid) if fixed is None else fixed
            total += level * self.factor(mid) * (b - a)
        return total / (stop - start) if stop > start else 0.0


def _seconds(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def offered_rates(
    snapshot: Snapshot, items: Sequence[Interval], marks: Sequence[Mark]
) -> dict[str, list[float]]:
    """The open model's mean rate asked of each paced operation in each interval.

    The plan's rate, ramped to ``ramp_to`` over warmup and sustain, times the
    live rate factor of the last rate change (0 while paused); a periodic
    group asks ``count / every``. Empty in the closed model.
    """
    plan = snapshot.plan
    rate = plan.get("rate")
    if snapshot.report.model.type != "open" or not isinstance(rate, int | float):
        return {}
    ramp_to = plan.get("ramp_to")
    schedule = _Schedule(
        rate=float(rate),
        ramp_to=float(ramp_to) if isinstance(ramp_to, int | float) else float(rate),
        ramp_seconds=max(_seconds(plan.get("warmup")) + _seconds(plan.get("duration")), 1e-9),
        changes=sorted(
            (n.elapsed, float(factor))
            for n in snapshot.report.notices
            if n.kind == "rate" and isinstance(factor := n.details.get("factor"), int | float)
        ),
        paused=[(m.start, m.end) for m in marks if m.kind == "pause" and m.end is not None],
    )
    groups = _groups(plan)
    shares = rate_shares(groups)
    out: dict[str, list[float]] = {}
    for group in groups:
        if group.every is not None:
            fixed = group.count / group.every
            out[group.name] = [schedule.mean(i.start, i.end, fixed) for i in items]
        elif group.name in shares:
            share = shares[group.name]
            out[group.name] = [share * schedule.mean(i.start, i.end) for i in items]
    return out


def spectrum_points(hist: HdrHistogram) -> list[tuple[float, float]]:
    """``(percentile, µs)`` from 0 to 99.999%, evenly spaced on a ``1 / (1 - p)`` log axis."""
    if hist.get_total_count() == 0:
        return []
    steps = range(SPECTRUM_STEPS * SPECTRUM_NINES + 1)
    percentiles = [100.0 * (1.0 - 10.0 ** (-step / SPECTRUM_STEPS)) for step in steps]
    values = hist.get_percentile_to_value_dict(percentiles)  # one walk of the counts
    return [(p, float(values[p])) for p in percentiles]


def spectra(snapshot: Snapshot, phase: str = "sustain") -> list[Spectrum]:
    """``TOTAL``'s and every operation's merged phase histograms, corrected and uncorrected."""
    section = snapshot.report.phases.get(phase)
    out = []
    for name in [TOTAL, *snapshot.operations]:
        if name == TOTAL and section is not None and section.total.latency_kind == MIXED:
            kinds = ", ".join(sorted({op.latency_kind for op in section.ops.values()}))
            note = f"latencies of different kinds ({kinds}) are not merged: see each operation"
            out.append(Spectrum(name, [], None, note))
            continue
        corrected = spectrum_points(phase_histogram([snapshot], name, phase))
        uncorrected = None
        if corrected and has_uncorrected([snapshot], name, phase):
            uncorrected = spectrum_points(
                phase_histogram([snapshot], name, phase, "hist_uncorrected")
            )
        note = "" if corrected else f"no latency recorded in {phase}"
        delay = spectrum_points(phase_histogram([snapshot], name, phase, "hist_delay"))
        out.append(Spectrum(name, corrected, uncorrected or None, note, delay or None))
    return out


def marks(items: Sequence[Interval], report: Report) -> list[Mark]:
    """Phases (spans), pauses (spans until the next resume), rate changes and other notices.

    A notice given before the first interval ended (the run's clock, a tool missing)
    says something of the whole run: it is in the notices, not a line at the start.
    """
    out: list[Mark] = []
    first_end = items[0].end if items else 0.0
    bounds: dict[str, list[float]] = {}
    for item in items:
        span = bounds.setdefault(item.phase, [item.start, item.end])
        span[1] = item.end
    out.extend(Mark("phase", start, end, phase) for phase, (start, end) in bounds.items())
    run_end = max((end for _, end in bounds.values()), default=0.0)
    paused: float | None = None
    for notice in report.notices:
        kind, at, message = notice.kind, notice.elapsed, text(notice.message)
        if kind == "pause":
            paused = at
        elif kind == "resume" and paused is not None:
            out.append(Mark("pause", paused, at, "paused"))
            paused = None
        elif kind == "rate":
            out.append(Mark("rate", at, None, message))
        elif kind != "resume" and at >= first_end:
            out.append(Mark("notice", at, None, message))
    if paused is not None:
        out.append(Mark("pause", paused, run_end, "paused"))
    return out


def resources(snapshot: Snapshot) -> Resources:
    """Each worker's CPU (by pid), the target's CPU, RSS and fds, the host's CPU and memory."""
    samples = snapshot.resources
    t = [s["elapsed"] for s in samples]
    workers: dict[str, list[float | None]] = {}
    for index, sample in enumerate(samples):
        for worker in sample["workers"]:
            workers.setdefault(f"worker pid {worker['pid']}", [None] * len(samples))[index] = (
                worker["cpu"]
            )
    target = _columns([dict(s["target"] or {}) for s in samples], ("cpu", "rss", "fds"))
    host = _columns([dict(s["host"]) for s in samples], ("cpu", "mem_used"))
    return Resources(t, workers, target, host)


def _columns(parts: list[dict[str, object]], keys: Iterable[str]) -> dict[str, list[float | None]]:
    columns: dict[str, list[float | None]] = {}
    for key in keys:
        column = [_number(part.get(key)) for part in parts]
        if any(v is not None for v in column):
            columns[key] = column
    return columns


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def summary(report: Report, phase: str = "sustain") -> list[dict[str, str]]:
    """The phase's whole figures per operation and ``TOTAL``, as table cells."""
    section = report.phases.get(phase)
    if section is None:
        return []
    protocols = report.protocols or {}
    connections = {
        name: describe_connections(protocols.get(name) or {}, figures.streams_per_connection)
        for name, figures in section.ops.items()
    }
    rows = []
    for name, figures in [(TOTAL, section.total), *section.ops.items()]:
        row = {
            "op": name,
            "ok": f"{figures.ok:,}",
            "errors": f"{figures.errors:,}",
            "error rate": format_value("error_rate", figures.error_rate),
            "throughput": format_value("throughput", figures.throughput),
        }
        for p in PERCENTILES:
            value = figures.latency_us.value(p)
            row[LABELS[p]] = "-" if value is None else format_value(p, value)
        row["latency"] = figures.latency_kind.replace("_", " ")
        row["counters"] = text(dict(without_stream_samples(figures.counters)) or None)
        if any(connections.values()):
            row["connections"] = connections.get(name, "")
        rows.append(row)
    return rows


def _flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, Mapping) and value:
        rows = []
        for key, item in value.items():
            rows.extend(_flatten(f"{prefix}.{key}" if prefix else str(key), item))
        return rows
    if isinstance(value, list) and any(isinstance(item, Mapping) for item in value):
        return [row for i, item in enumerate(value) for row in _flatten(f"{prefix}.{i}", item)]
    return [(prefix, text(value))]


def facts(snapshot: Snapshot, report: Report) -> list[tuple[str, str]]:
    """The run in a line: when, against what, how loaded and timed, for how long (a fact
    without a label is its value alone, one without a value is left out)."""
    return [
        ("started", text(report.started_at)),
        ("target", text(report.target)),
        ("load", describe_model(report.model, rate_changes(report))),
        ("", describe_clock(report.clock)),
        ("phases", f"warmup {report.warmup_s:g} s, sustain {report.duration_s:g} s"),
        ("processes", text(report.processes)),
        ("protobench", text(snapshot.provenance.get("tool_version"))),
    ]


def provenance(snapshot: Snapshot, report: Report) -> list[tuple[str, str]]:
    """Identity, provenance (profile, overrides, host, versions), plan and labels, flattened."""
    plan: dict[str, object] = dict(snapshot.plan)
    rows = [
        ("snapshot", text(snapshot.id)),
        ("created at", text(snapshot.created_at)),
        ("started at", text(report.started_at)),
        ("target", text(report.target)),
        ("target kind", text(report.target_kind)),
        ("stop reason", text(report.stop_reason)),
        ("model", describe_model(report.model, rate_changes(report))),
        ("processes", text(report.processes)),
    ]
    for key in ("warmup", "duration", "interval", "timeout", "options", "serve"):
        if key in plan:
            rows.extend(_flatten(f"plan.{key}", plan[key]))
    rows.extend(_flatten("", dict(snapshot.provenance)))
    if snapshot.labels:
        rows.extend(_flatten("labels", snapshot.labels))
    return rows


def _left_out(snapshot: Snapshot, kept: int) -> str:
    left = len(snapshot.series) - kept
    if not left:
        return ""
    which = "1 partial interval is" if left == 1 else f"{left} partial intervals are"
    return (
        f"{which} left out of the time charts (shorter than the run's {snapshot.interval:g} s "
        "interval: usually the first and the last)"
    )


def run_view(snapshot: Snapshot) -> RunView:
    """The whole view of one snapshot (:class:`SnapshotError` when its report does not load)."""
    report = snapshot.report
    every = intervals(snapshot, phase=None, total_histograms=False)
    whole = WHOLE * snapshot.interval
    items = [item for item in every if item.duration >= whole]
    partial = " (partial)" if snapshot.partial else ""
    run_marks = marks(every, report)
    ops = op_series(items, snapshot.operations, offered_rates(snapshot, items, run_marks))
    sustain = [i for i, item in enumerate(items) if item.phase == "sustain"]
    total_offered = ops[0].offered
    mean_offered = None
    if total_offered and sustain:
        mean_offered = sum(total_offered[i] for i in sustain) / len(sustain)
    return RunView(
        id=snapshot.id,
        title=text(f"{report.profile} · {report.protocol}{partial}"),
        facts=facts(snapshot, report),
        open_model=report.model.type == "open",
        verdict=verdict(report),
        cards=cards(report, mean_offered),
        ops=ops,
        spectra=spectra(snapshot),
        marks=run_marks,
        resources=resources(snapshot),
        summary=summary(report),
        provenance=provenance(snapshot, report),
        notices=[f"{n.elapsed:.1f} s {text(n.kind)}: {text(n.message)}" for n in report.notices],
        left_out=_left_out(snapshot, len(items)),
        profile=snapshot.target_profile,
        profile_overhead=report.target_profile.overhead if report.target_profile else "",
    )
