"""Reading a snapshot's measurements: its interval series and phase histograms.

Shared by ``diff``, ``export``, the HTML report and the monitor's replay and
baseline. A snapshot's ``series`` holds one record per interval with one
summary per operation (and that interval's encoded histogram), read back
typed when the snapshot is read (a :class:`~protobench.engine.series_model.SeriesRecord`
each); :func:`intervals` adds the ``TOTAL`` of all operations to each
record, merged exactly with the engine's own accumulator (histograms summed,
never percentiles averaged). :func:`phase_histogram` and :func:`phase_counts`
give a phase's whole-run figures over one or several snapshots. Like the
report's total, ``TOTAL`` has a latency only when its ops measure one kind of
latency (a publisher's local write and a subscriber's end to end are not
merged: its latency is empty then, and ``diff`` shows ``-``);
:func:`has_uncorrected` says where its uncorrected histograms are whole.

The snapshot is validated when read (:func:`~protobench.snapshots.model.load_snapshot`),
except the encoded histograms of its intervals, which are decoded here: a
corrupt one is a :class:`~protobench.snapshots.store.SnapshotError` naming the
snapshot, the interval and the operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from hdrh.histogram import HdrHistogram

from protobench.engine.aggregate import interval_of, op_summary
from protobench.engine.metrics import OpAccumulator, decode, encode, merge
from protobench.engine.summaries import MIXED, OpSummary
from protobench.snapshots.model import Snapshot
from protobench.snapshots.schema import decoded
from protobench.snapshots.store import SnapshotError
from protobench.vocab.percentiles import PERCENTILES

TOTAL = "TOTAL"
LATENCY_PERCENTILES = {p.key: p.value for p in PERCENTILES}
"""The latency percentiles read back, by name (``p999`` is p99.9)."""


@dataclass(frozen=True)
class Interval:
    """One interval of a run: where it lies in the run and each op's summary, plus ``TOTAL``."""

    phase: str
    index: int
    start: float
    end: float
    duration: float
    ops: dict[str, OpSummary]


def checked_histogram(snapshot: Snapshot, where: str, encoded: str) -> HdrHistogram:
    """The decoded histogram at ``where`` in ``snapshot``; :class:`SnapshotError` if corrupt."""
    try:
        return decoded(encoded, where)
    except ValueError as exc:
        raise SnapshotError(f"snapshot {snapshot.id}: {exc}") from None


def total_of(ops: dict[str, OpSummary], seconds: float, encoded: bool = True) -> OpSummary:
    """The exact merge of one interval's per-op summaries, with its encoded histograms
    (``encoded=False``: without them, for a reader of its figures alone).

    In the open model (an op has ``hist_uncorrected``) the total has the
    uncorrected latencies and histogram too; with the kernel clock (an op has
    ``hist_delay``) the generator's delay.
    """
    acc = OpAccumulator()
    for summary in ops.values():
        acc.add(interval_of(summary))
    corrected = any(summary.hist_uncorrected for summary in ops.values())
    kind = one_kind(summary.latency_kind for summary in ops.values())
    delay = acc.hist_delay
    # no latency across kinds (the figures say MIXED); the generator's delay is one kind
    figures = op_summary(acc, seconds, corrected=corrected, kind=kind)
    if not encoded:
        return figures
    encoded_delay = encode(delay) if delay.get_total_count() else None
    if kind == MIXED:
        return replace(figures, hist_delay=encoded_delay)
    return replace(
        figures,
        hist=encode(acc.hist) if acc.ok else "",
        hist_uncorrected=encode(acc.hist_uncorrected) if corrected else None,
        hist_delay=encoded_delay,
    )


def one_kind(kinds: Iterable[str]) -> str:
    """The latency kind that every op measures, or :data:`MIXED`."""
    found = set(kinds)
    return found.pop() if len(found) == 1 else MIXED


def latency(figures: OpSummary, name: str) -> float | None:
    """Percentile ``name`` (µs) of an op's interval figures, ``None`` without a success.

    From ``latency_us``, or, when the snapshot predates that percentile (p95),
    from the interval's histogram.
    """
    value = figures.latency_us.value(name)
    if value is not None:
        return value
    if name not in LATENCY_PERCENTILES or not figures.hist:
        return None
    hist = decode(figures.hist)
    if hist.get_total_count() == 0:
        return None
    return float(hist.get_value_at_percentile(LATENCY_PERCENTILES[name]))


def intervals(
    snapshot: Snapshot,
    phase: str | None = "sustain",
    min_fraction: float = 0.0,
    total_histograms: bool = True,
) -> list[Interval]:
    """The intervals of ``phase`` (every phase when ``None``), in run order.

    Intervals shorter than ``min_fraction`` of the plan's interval (a run cut
    short, a phase that is not a multiple of the interval) are left out.
    ``total_histograms=False``: ``TOTAL`` without its encoded histograms (a
    tenth of the time the intervals take, for a reader that does not use them).
    """
    shortest = min_fraction * snapshot.interval
    out = []
    for number, record in enumerate(snapshot.series):
        if phase is not None and record.phase != phase:
            continue
        if record.duration < shortest:
            continue
        ops = dict(record.ops)
        try:
            ops[TOTAL] = total_of(record.ops, record.duration, total_histograms)
        except Exception as exc:  # a corrupt histogram (hdrh raises many types): name it
            for op, figures in record.ops.items():
                for key, encoded in (
                    ("hist", figures.hist),
                    ("hist_uncorrected", figures.hist_uncorrected),
                    ("hist_delay", figures.hist_delay),
                ):
                    where = f"series.{number}.ops.{op}.{key}"
                    checked_histogram(snapshot, where, encoded or "")
            raise SnapshotError(
                f"snapshot {snapshot.id}: series.{number}: its histograms cannot be "
                f"merged ({type(exc).__name__})"
            ) from None
        end = record.elapsed
        out.append(Interval(record.phase, record.index, record.start, end, record.duration, ops))
    return out


type HistKey = Literal["hist", "hist_uncorrected", "hist_delay"]
"""A phase histogram: latencies; the open model's from the actual send; the generator's delay."""


def phase_histogram(
    snapshots: Sequence[Snapshot], op: str, phase: str = "sustain", key: HistKey = "hist"
) -> HdrHistogram:
    """The merged histogram ``key`` of ``op`` (or ``TOTAL``) over the phase of every snapshot.

    ``hist``: the latencies; ``hist_uncorrected``: the open model's latencies from
    the actual send; ``hist_delay``: the generator's delay (empty when not measured).
    The latencies of ``TOTAL`` are empty for a run whose ops measure several kinds.
    """
    encoded: list[str] = []
    for snapshot in snapshots:
        hists = snapshot.histograms.get(phase, {})
        names = list(hists) if op == TOTAL else [op]
        section = snapshot.report.phases.get(phase)
        mixed = section is not None and section.total.latency_kind == MIXED
        if op == TOTAL and mixed and key != "hist_delay":
            continue  # no total latency across kinds
        for name in names:
            if name in hists:
                item = hists[name]
                encoded.append(item.get(key, ""))
    return merge(encoded)


def has_uncorrected(snapshots: Sequence[Snapshot], op: str, phase: str = "sustain") -> bool:
    """Whether ``op`` (or ``TOTAL``) has latencies from the actual send over the phase.

    Only in the open model (snapshots written before the engine kept them to
    it hold a closed run's periodic groups' too), and for ``TOTAL`` only when
    every operation with latencies has them: a merge of some operations' is no
    total (a stream's deliveries have no send of their own).
    """
    for snapshot in snapshots:
        if snapshot.report.model.type != "open":
            return False
        hists = snapshot.histograms.get(phase, {})
        for name in list(hists) if op == TOTAL else [op]:
            item = hists.get(name)
            if item is not None and item["hist"] and not item.get("hist_uncorrected"):
                return False
    return True


def phase_counts(
    snapshots: Sequence[Snapshot], op: str, phase: str = "sustain"
) -> tuple[int, int, float]:
    """(successes, errors, seconds) of ``op`` (or ``TOTAL``) over the phase of every snapshot."""
    ok = errors = 0
    seconds = 0.0
    for snapshot in snapshots:
        section = snapshot.report.phases.get(phase)
        if section is None:
            continue
        figures = section.scope(None if op == TOTAL else op)
        if figures is None:
            continue
        ok += figures.ok
        errors += figures.errors
        seconds += section.duration_s
    return ok, errors, seconds
