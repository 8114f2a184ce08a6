"""A saved run to compare the live one with: its sustain figures and throughput curve."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Baseline:
    """The figures of a snapshot that the monitor overlays (sustain phase)."""

    id: str
    profile: str
    throughput: dict[str, float]
    latency: dict[str, dict[str, float]]
    latency_uncorrected: dict[str, dict[str, float]]
    curve: tuple[tuple[float, float], ...]

    @classmethod
    def from_snapshot(cls, snapshot: dict[str, Any]) -> Baseline:
        report = snapshot["report"]
        sustain = report.get("phases", {}).get("sustain") or {"ops": {}, "total": {}}
        scopes = {**sustain["ops"], "total": sustain["total"]}
        curve = tuple(
            (float(item["elapsed"]), sum(op.get("throughput", 0.0) for op in item["ops"].values()))
            for item in snapshot.get("series", [])
            if item["phase"] != "drain"
        )
        return cls(
            id=str(snapshot.get("id", "")),
            profile=str(report.get("profile", "")),
            throughput={name: float(s.get("throughput", 0.0)) for name, s in scopes.items()},
            latency={name: dict(s.get("latency_us", {})) for name, s in scopes.items()},
            latency_uncorrected={
                name: dict(s.get("latency_uncorrected_us", {})) for name, s in scopes.items()
            },
            curve=curve,
        )

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
