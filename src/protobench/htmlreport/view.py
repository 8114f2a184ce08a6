"""A snapshot, read once into the plain series and tables the HTML report draws.

This is the only module of the report that reads a snapshot: its keys
(``protobench.snapshot/1``) and its typed report (loaded once, by
:func:`~protobench.snapshots.store.read`); the charts and the page take a
:class:`RunView`. Counters and provenance are read generically and verdicts
and thresholds field by field (every one is shown), so a field the engine adds
later appears without a change here. Times are seconds since the run's start
(interval ends), latencies microseconds, rates per second.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from protobench.engine.metrics import merge
from protobench.engine.report_model import Report, ThresholdResult, Verdicts, to_plain
from protobench.engine.stacks.model import TargetProfile
from protobench.engine.summaries import EMPTY_OP, LatencySummary
from protobench.redaction import redact_value
from protobench.snapshots.model import Snapshot
from protobench.snapshots.series import TOTAL, Interval, intervals
from protobench.vocab.percentiles import PERCENTILE_KEYS

PERCENTILES = (*PERCENTILE_KEYS, "max")
SPECTRUM_STEPS = 10
"""Points per decade of the spectrum's ``1 / (1 - p)`` axis."""
SPECTRUM_NINES = 5
"""The spectrum goes to 99.999%."""


@dataclass(frozen=True)
class OpSeries:
    """One operation's (or ``TOTAL``'s) figures per interval, in run order."""

    name: str
    t: list[float]
    ok_rate: list[float]
    error_rate: list[float]
    latency: dict[str, list[float | None]]
    errors: dict[str, list[float]]
    counters: dict[str, list[float]]


@dataclass(frozen=True)
class Spectrum:
    """An operation's sustain latency by percentile: ``(percentile, µs)`` points."""

    name: str
    corrected: list[tuple[float, float]]
    uncorrected: list[tuple[float, float]] | None


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
    open_model: bool
    ops: list[OpSeries]
    spectra: list[Spectrum]
    marks: list[Mark]
    resources: Resources
    summary: list[dict[str, str]]
    verdicts: list[tuple[str, str]]
    thresholds: list[dict[str, str]]
    provenance: list[tuple[str, str]]
    notices: list[str] = field(default_factory=list)
    profile: TargetProfile | None = None
    """The target's sampled stacks (``run --profile-target``), and what sampling cost."""
    profile_overhead: str = ""


def text(value: Any) -> str:
    """A field's value as one line of text (lists and mappings as compact JSON)."""
    value = redact_value(value)
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, bool | int):
        return str(value)
    return json.dumps(value, separators=(", ", ": "), default=str)


def _rate(value: float, seconds: float) -> float:
    return value / seconds if seconds > 0 else 0.0


def op_series(items: Sequence[Interval], names: Sequence[str]) -> list[OpSeries]:
    """Per interval of every phase: ``TOTAL`` first, then each operation of ``names``."""
    out = []
    for name in [TOTAL, *names]:
        t: list[float] = []
        ok: list[float] = []
        err: list[float] = []
        latency: dict[str, list[float | None]] = {p: [] for p in PERCENTILES}
        errors: dict[str, list[float]] = {}
        counters: dict[str, list[float]] = {}
        for index, item in enumerate(items):
            figures = item.ops.get(name, EMPTY_OP)
            t.append(item.end)
            ok.append(_rate(figures.ok, item.duration))
            err.append(_rate(figures.errors, item.duration))
            measured = figures.latency_us if figures.ok else LatencySummary()
            for p in PERCENTILES:
                latency[p].append(measured.value(p))
            keyed = {**figures.errors_by_class, **figures.error_codes}
            _append(errors, keyed, index, item.duration)
            _append(counters, figures.counters, index, item.duration)
        out.append(OpSeries(name, t, ok, err, latency, errors, counters))
    return out


def _append(
    columns: dict[str, list[float]], values: Mapping[str, int], index: int, seconds: float
) -> None:
    """Add one interval's per-second values; a key first seen late gets zeros before."""
    for key in values:
        columns.setdefault(key, [0.0] * index)
    for key, column in columns.items():
        column.append(_rate(float(values.get(key, 0)), seconds))


def spectrum_points(hist: HdrHistogram) -> list[tuple[float, float]]:
    """``(percentile, µs)`` from 0 to 99.999%, evenly spaced on a ``1 / (1 - p)`` log axis."""
    if hist.get_total_count() == 0:
        return []
    steps = range(SPECTRUM_STEPS * SPECTRUM_NINES + 1)
    percentiles = [100.0 * (1.0 - 10.0 ** (-step / SPECTRUM_STEPS)) for step in steps]
    values = hist.get_percentile_to_value_dict(percentiles)  # one walk of the counts
    return [(p, float(values[p])) for p in percentiles]


def spectra(snapshot: Snapshot, phase: str = "sustain") -> list[Spectrum]:
    """The merged phase histograms of ``TOTAL`` and every operation, corrected and not."""
    hists = snapshot.histograms.get(phase, {})
    out = []
    for name in [TOTAL, *snapshot.operations]:
        names = list(hists) if name == TOTAL else [name]
        corrected = [hists[n]["hist"] for n in names if n in hists]
        raw = [
            hists[n]["hist_uncorrected"] for n in names if "hist_uncorrected" in hists.get(n, {})
        ]
        uncorrected = spectrum_points(merge(raw)) if raw else None
        out.append(Spectrum(name, spectrum_points(merge(corrected)), uncorrected))
    return out


def marks(items: Sequence[Interval], report: Report) -> list[Mark]:
    """Phases (spans), pauses (spans until the next resume), rate changes and other notices."""
    out: list[Mark] = []
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
        else:
            out.append(Mark("rate" if kind == "rate" else "notice", at, None, message))
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
    return float(value) if isinstance(value, int | float) else None


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1_000_000:
        return f"{value / 1e6:.3g} s"
    if value >= 1000:
        return f"{value / 1000:.3g} ms"
    return f"{value:.0f} µs"


def summary(report: Report, phase: str = "sustain") -> list[dict[str, str]]:
    """The phase's whole figures per operation and ``TOTAL``, as table cells."""
    section = report.phases.get(phase)
    if section is None:
        return []
    rows = []
    for name, figures in [(TOTAL, section.total), *section.ops.items()]:
        row = {
            "op": name,
            "ok": f"{figures.ok:,}",
            "errors": f"{figures.errors:,}",
            "error rate": f"{figures.error_rate:.2%}",
            "throughput": f"{figures.throughput:,.1f}/s",
        }
        row.update({p: _us(figures.latency_us.value(p)) for p in PERCENTILES})
        row["counters"] = text(figures.counters or None)
        rows.append(row)
    return rows


def _flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict) and value:
        rows = []
        for key, item in value.items():
            rows.extend(_flatten(f"{prefix}.{key}" if prefix else str(key), item))
        return rows
    return [(prefix, text(value))]


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
        ("model", text(to_plain(report.model))),
        ("processes", text(report.processes)),
    ]
    for key in ("warmup", "duration", "interval", "timeout", "options", "serve"):
        if key in plan:
            rows.append((f"plan.{key}", text(plan[key])))
    rows.extend(_flatten("", dict(snapshot.provenance)))
    if snapshot.labels:
        rows.extend(_flatten("labels", snapshot.labels))
    return rows


def run_view(snapshot: Snapshot) -> RunView:
    """The whole view of one snapshot (:class:`SnapshotError` when its report does not load)."""
    report = snapshot.report
    items = intervals(snapshot, phase=None)
    partial = " (partial)" if snapshot.partial else ""
    return RunView(
        id=snapshot.id,
        title=text(f"{report.profile} · {report.protocol}{partial}"),
        open_model=report.model.type == "open",
        ops=op_series(items, snapshot.operations),
        spectra=spectra(snapshot),
        marks=marks(items, report),
        resources=resources(snapshot),
        summary=summary(report),
        verdicts=_fields(report.verdicts),
        thresholds=[dict(_fields(threshold)) for threshold in report.thresholds],
        provenance=provenance(snapshot, report),
        notices=[f"{n.elapsed:.1f} s {text(n.kind)}: {text(n.message)}" for n in report.notices],
        profile=snapshot.target_profile,
        profile_overhead=report.target_profile.overhead if report.target_profile else "",
    )


def _fields(part: ThresholdResult | Verdicts) -> list[tuple[str, str]]:
    """Every field of a part of the report as ``(key, text)``, in the JSON's order."""
    plain: dict[str, object] = to_plain(part)
    return [(key, text(value)) for key, value in plain.items()]
