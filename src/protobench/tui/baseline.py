"""A saved run to compare the live one with: its sustain figures and its curves over time.

The curves (:attr:`Baseline.curves`) are each op's and the total's throughput and
p99 (corrected and uncorrected) per series record of warmup and sustain; the
total's p99 comes from the record's op histograms merged (when every op measures
the same thing), never from its ops' percentiles.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from protobench.engine.report_model import to_plain
from protobench.engine.series_model import SeriesRecord
from protobench.engine.summaries import LatencySummary
from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotError, SnapshotStore

if TYPE_CHECKING:
    from protobench.engine.metrics import Counts

CURVES = ("throughput", "p99", "p99_uncorrected")
"""The baseline's curves over time, per op and for the total."""
SAMPLED = ("throughput", "p99")
"""The metrics compared interval by interval (``diff``'s test) in the live tables."""


@dataclass(frozen=True)
class Baseline:
    """The figures of a snapshot that the monitor overlays (sustain phase)."""

    id: str
    profile: str
    throughput: dict[str, float]
    latency: dict[str, dict[str, float]]
    latency_uncorrected: dict[str, dict[str, float]]
    times: tuple[float, ...]
    """The run time at the end of each series record the curves have a value for."""
    curves: dict[str, dict[str, tuple[float, ...]]]
    """``throughput``, ``p99`` and ``p99_uncorrected`` of each op and the ``total``, per
    record (NaN where a record has no sample)."""
    samples: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    """Per op, each metric of :data:`SAMPLED` in every sustain interval (``total``: its
    throughput only; a total's p99 needs the merged histograms, so it is not tested)."""

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> Baseline:
        report = snapshot.report
        sustain = report.sustain
        scopes = {**sustain.ops, "total": sustain.total} if sustain else {}
        series = [item for item in snapshot.series if item.phase != "drain"]
        return cls(
            id=snapshot.id,
            profile=report.profile,
            throughput={name: s.throughput for name, s in scopes.items()},
            latency={name: to_plain(s.latency_us) for name, s in scopes.items()},
            latency_uncorrected={
                name: to_plain(s.latency_uncorrected_us or LatencySummary())
                for name, s in scopes.items()
            },
            times=tuple(item.elapsed for item in series),
            curves=_curves(series),
            samples=_samples(snapshot.series),
        )

    @classmethod
    def load(cls, store: SnapshotStore, ref: str) -> Baseline:
        """The baseline ``ref`` names (``--baseline``); :class:`SnapshotError` in one line."""
        snapshot = store.load(ref)
        try:
            return cls.from_snapshot(snapshot)
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"{ref}: not usable as a baseline ({exc})") from exc

    def significant(self, name: str, metric: str, new: tuple[float, ...]) -> bool | None:
        """Whether ``new`` differs from the baseline's intervals by ``diff``'s test.

        ``None`` when either side has no samples of ``metric`` for ``name``.
        """
        base = self.samples.get(name, {}).get(metric, ())
        if not base or not new:
            return None
        # diff's statistics (with numpy) load with the first comparison, not before the
        # monitor's first frame
        from protobench.snapshots.diff import ALPHA, compare_samples  # noqa: PLC0415
        from protobench.snapshots.stats import CONFIDENCE  # noqa: PLC0415

        return compare_samples(name, metric, base, new, ALPHA, CONFIDENCE)[4]

    def curve_at(
        self, times: tuple[float, ...], metric: str = "throughput", scope: str = "total"
    ) -> tuple[float, ...]:
        """The baseline's ``metric`` of ``scope`` (an op or ``total``) at the same run times
        (NaN past its end, or where it has none)."""
        values = self.curves.get(metric, {}).get(scope, ())
        out = []
        for t in times:
            i = bisect.bisect_left(self.times, t - 1e-6)
            out.append(values[i] if i < len(values) else math.nan)
        return tuple(out)

    def figures(self, name: str, corrected: bool) -> dict[str, float]:
        """Latency percentiles of one operation (or ``total``)."""
        source = self.latency if corrected else self.latency_uncorrected
        return source.get(name) or self.latency.get(name, {})


def _curves(series: Sequence[SeriesRecord]) -> dict[str, dict[str, tuple[float, ...]]]:
    """Each op's and the total's throughput and p99 (corrected, uncorrected) per record."""
    # numpy merges the total's histograms: a baseline is read off the UI thread (b) or
    # before the monitor opens (--baseline)
    from protobench.engine.metrics import counts_summary  # noqa: PLC0415
    from protobench.tui.latency import add_counts, counts_of  # noqa: PLC0415

    out: dict[str, dict[str, list[float]]] = {m: {} for m in CURVES}
    for number, item in enumerate(series):
        same_kind = len({op.latency_kind for op in item.ops.values()}) == 1
        merged: list[Counts | None] = [None, None]
        figures: dict[str, tuple[float, float | None, float | None]] = {}
        for name, op in item.ops.items():
            uncorrected = op.latency_uncorrected_us.p99 if op.latency_uncorrected_us else None
            figures[name] = (op.throughput, op.latency_us.p99, uncorrected)
            if same_kind:
                for i, encoded in enumerate((op.hist, op.hist_uncorrected)):
                    merged[i] = add_counts(merged[i], counts_of(encoded or ""))
        total = [counts_summary(c).get("p99") if c is not None else None for c in merged]
        throughput = sum(f[0] for f in figures.values())
        figures["total"] = (throughput, total[0], total[1])
        for name, values in figures.items():
            for metric, value in zip(CURVES, values, strict=True):
                line = out[metric].setdefault(name, [])
                line.extend([math.nan] * (number - len(line)))
                line.append(math.nan if value is None else value)
    for lines in out.values():
        for line in lines.values():
            line.extend([math.nan] * (len(series) - len(line)))
    return {m: {n: tuple(v) for n, v in lines.items()} for m, lines in out.items()}


def _samples(series: Sequence[SeriesRecord]) -> dict[str, dict[str, tuple[float, ...]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for item in series:
        if item.phase != "sustain":
            continue
        total = out.setdefault("total", {m: [] for m in SAMPLED})
        total["throughput"].append(sum(f.throughput for f in item.ops.values()))
        for name, figures in item.ops.items():
            metrics = out.setdefault(name, {m: [] for m in SAMPLED})
            metrics["throughput"].append(figures.throughput)
            p99 = figures.latency_us.value("p99")
            if p99 is not None:
                metrics["p99"].append(p99)
    return {name: {m: tuple(v) for m, v in metrics.items()} for name, metrics in out.items()}
