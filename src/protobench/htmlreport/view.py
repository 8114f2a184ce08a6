"""A snapshot, read once into the plain series and tables the HTML report draws.

This is the only module of the report that knows the snapshot's and the
report's keys (``protobench.snapshot/1``); the charts and the page take a
:class:`RunView`. Counters, verdicts, thresholds and provenance are read
generically (every key present is shown), so a field the engine adds later
appears without a change here. Times are seconds since the run's start
(interval ends), latencies microseconds, rates per second.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from protobench.engine.metrics import merge
from protobench.redaction import redact_value
from protobench.snapshots.series import TOTAL, intervals, operations

PERCENTILES = ("p50", "p90", "p95", "p99", "p999", "max")
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


def op_series(snapshot: dict[str, Any]) -> list[OpSeries]:
    """Per interval of every phase: ``TOTAL`` first, then each operation."""
    items = intervals(snapshot, phase=None)
    out = []
    for name in [TOTAL, *operations(snapshot)]:
        t: list[float] = []
        ok: list[float] = []
        err: list[float] = []
        latency: dict[str, list[float | None]] = {p: [] for p in PERCENTILES}
        errors: dict[str, list[float]] = {}
        counters: dict[str, list[float]] = {}
        for index, item in enumerate(items):
            figures = item.ops.get(name, {})
            t.append(item.end)
            ok.append(_rate(figures.get("ok", 0), item.duration))
            err.append(_rate(figures.get("errors", 0), item.duration))
            measured = figures.get("latency_us", {}) if figures.get("ok") else {}
            for p in PERCENTILES:
                latency[p].append(measured.get(p))
            keyed = {**figures.get("errors_by_class", {}), **figures.get("error_codes", {})}
            _append(errors, keyed, index, item.duration)
            _append(counters, figures.get("counters", {}), index, item.duration)
        out.append(OpSeries(name, t, ok, err, latency, errors, counters))
    return out


def _append(
    columns: dict[str, list[float]], values: dict[str, Any], index: int, seconds: float
) -> None:
    """Add one interval's per-second values; a key first seen late gets zeros before."""
    for key, value in values.items():
        if isinstance(value, int | float):
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


def spectra(snapshot: dict[str, Any], phase: str = "sustain") -> list[Spectrum]:
    """The merged phase histograms of ``TOTAL`` and every operation, corrected and not."""
    hists = snapshot.get("histograms", {}).get(phase, {})
    out = []
    for name in [TOTAL, *operations(snapshot)]:
        names = list(hists) if name == TOTAL else [name]
        corrected = [hists[n]["hist"] for n in names if n in hists]
        raw = [
            hists[n]["hist_uncorrected"] for n in names if "hist_uncorrected" in hists.get(n, {})
        ]
        uncorrected = spectrum_points(merge(raw)) if raw else None
        out.append(Spectrum(name, spectrum_points(merge(corrected)), uncorrected))
    return out


def marks(snapshot: dict[str, Any]) -> list[Mark]:
    """Phases (spans), pauses (spans until the next resume), rate changes and other notices."""
    out: list[Mark] = []
    bounds: dict[str, list[float]] = {}
    for record in snapshot["series"]:
        end = float(record["elapsed"])
        span = bounds.setdefault(record["phase"], [end - float(record["duration"]), end])
        span[1] = end
    out.extend(Mark("phase", start, end, phase) for phase, (start, end) in bounds.items())
    run_end = max((end for _, end in bounds.values()), default=0.0)
    paused: float | None = None
    for notice in snapshot["report"].get("notices", []):
        kind = str(notice.get("kind", ""))
        at = float(notice.get("elapsed", 0.0))
        message = text(notice.get("message", kind))
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


def resources(snapshot: dict[str, Any]) -> Resources:
    """Each worker's CPU (by pid), the target's CPU, RSS and fds, the host's CPU and memory."""
    samples = snapshot.get("resources", [])
    t = [float(s["elapsed"]) for s in samples]
    workers: dict[str, list[float | None]] = {}
    for index, sample in enumerate(samples):
        for worker in sample.get("workers", []):
            workers.setdefault(f"worker pid {worker['pid']}", [None] * len(samples))[index] = (
                worker.get("cpu")
            )
    target = _columns(samples, "target", ("cpu", "rss", "fds"))
    host = _columns(samples, "host", ("cpu", "mem_used"))
    return Resources(t, workers, target, host)


def _columns(
    samples: list[dict[str, Any]], part: str, keys: Iterable[str]
) -> dict[str, list[float | None]]:
    columns: dict[str, list[float | None]] = {}
    for key in keys:
        column = [(s.get(part) or {}).get(key) for s in samples]
        if any(v is not None for v in column):
            columns[key] = column
    return columns


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1_000_000:
        return f"{value / 1e6:.3g} s"
    if value >= 1000:
        return f"{value / 1000:.3g} ms"
    return f"{value:.0f} µs"


def summary(snapshot: dict[str, Any], phase: str = "sustain") -> list[dict[str, str]]:
    """The phase's whole figures per operation and ``TOTAL``, as table cells."""
    section = snapshot["report"]["phases"].get(phase)
    if section is None:
        return []
    rows = []
    for name, figures in [(TOTAL, section["total"]), *section.get("ops", {}).items()]:
        latency = figures.get("latency_us", {})
        row = {
            "op": name,
            "ok": f"{figures.get('ok', 0):,}",
            "errors": f"{figures.get('errors', 0):,}",
            "error rate": f"{figures.get('error_rate', 0.0):.2%}",
            "throughput": f"{figures.get('throughput', 0.0):,.1f}/s",
        }
        row.update({p: _us(latency.get(p)) for p in PERCENTILES})
        row["counters"] = text(figures.get("counters") or None)
        rows.append(row)
    return rows


def _flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict) and value:
        rows = []
        for key, item in value.items():
            rows.extend(_flatten(f"{prefix}.{key}" if prefix else str(key), item))
        return rows
    return [(prefix, text(value))]


def provenance(snapshot: dict[str, Any]) -> list[tuple[str, str]]:
    """Identity, provenance (profile, overrides, host, versions), plan and labels, flattened."""
    report = snapshot["report"]
    plan = snapshot.get("plan", {})
    rows = [
        ("snapshot", text(snapshot.get("id"))),
        ("created at", text(snapshot.get("created_at"))),
        ("started at", text(report.get("started_at"))),
        ("target", text(report.get("target"))),
        ("target kind", text(report.get("target_kind"))),
        ("stop reason", text(report.get("stop_reason"))),
        ("model", text(report.get("model"))),
        ("processes", text(report.get("processes"))),
    ]
    for key in ("warmup", "duration", "interval", "timeout", "options", "serve"):
        if key in plan:
            rows.append((f"plan.{key}", text(plan[key])))
    rows.extend(_flatten("", snapshot.get("provenance", {})))
    if snapshot.get("labels"):
        rows.extend(_flatten("labels", snapshot["labels"]))
    return rows


def run_view(snapshot: dict[str, Any]) -> RunView:
    """The whole view of one snapshot."""
    report = snapshot["report"]
    partial = " (partial)" if snapshot.get("partial") else ""
    title = f"{report.get('profile', '?')} · {report.get('protocol', '?')}{partial}"
    return RunView(
        id=str(snapshot["id"]),
        title=text(title),
        open_model=report.get("model", {}).get("type") == "open",
        ops=op_series(snapshot),
        spectra=spectra(snapshot),
        marks=marks(snapshot),
        resources=resources(snapshot),
        summary=summary(snapshot),
        verdicts=[(str(k), text(v)) for k, v in report.get("verdicts", {}).items()],
        thresholds=[{str(k): text(v) for k, v in t.items()} for t in report.get("thresholds", [])],
        provenance=provenance(snapshot),
        notices=[
            f"{float(n.get('elapsed', 0.0)):.1f} s {text(n.get('kind'))}: {text(n.get('message'))}"
            for n in report.get("notices", [])
        ],
    )
