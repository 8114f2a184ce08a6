"""A saved run to compare the live one with: its sustain figures and throughput curve."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from protobench.engine.report_model import to_plain
from protobench.engine.series_model import SeriesRecord
from protobench.engine.summaries import LatencySummary
from protobench.snapshots.diff import ALPHA, compare_samples
from protobench.snapshots.model import Snapshot
from protobench.snapshots.stats import CONFIDENCE
from protobench.snapshots.store import SnapshotError, SnapshotStore

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
    curve: tuple[tuple[float, float], ...]
    samples: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    """Per op, each metric of :data:`SAMPLED` in every sustain interval (``total``: its
    throughput only; a total's p99 needs the merged histograms, so it is not tested)."""

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> Baseline:
        report = snapshot.report
        sustain = report.sustain
        scopes = {**sustain.ops, "total": sustain.total} if sustain else {}
        series = snapshot.series
        curve = tuple(
            (item.elapsed, sum(op.throughput for op in item.ops.values()))
            for item in series
            if item.phase != "drain"
        )
        return cls(
            id=snapshot.id,
            profile=report.profile,
            throughput={name: s.throughput for name, s in scopes.items()},
            latency={name: to_plain(s.latency_us) for name, s in scopes.items()},
            latency_uncorrected={
                name: to_plain(s.latency_uncorrected_us or LatencySummary())
                for name, s in scopes.items()
            },
            curve=curve,
            samples=_samples(series),
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
        return compare_samples(name, metric, base, new, ALPHA, CONFIDENCE)[4]

    def curve_at(self, times: tuple[float, ...]) -> tuple[float, ...]:
        """The baseline's total throughput at the same run times (0 past its end)."""
        ends = [t for t, _ in self.curve]
        out = []
        for t in times:
            i = bisect.bisect_left(ends, t - 1e-6)
            out.append(self.curve[i][1] if i < len(self.curve) else 0.0)
        return tuple(out)

    def figures(self, name: str, corrected: bool) -> dict[str, float]:
        """Latency percentiles of one operation (or ``total``)."""
        source = self.latency if corrected else self.latency_uncorrected
        return source.get(name) or self.latency.get(name, {})


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
