"""Running figures of one node's resource frames, for the report's ``nodes[].resources``.

Each frame of a node's agent adds to sums and peaks: memory stays constant
however long the run, and the means are those of every sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protobench.engine.report_model import NodeResourceSummary
from protobench.engine.resource_log import peak


@dataclass
class NodeResources:
    """The CPU and memory of one node's workers (summed per sample) and of its host."""

    samples: int = 0
    workers_cpu_sum: float = 0.0
    workers_cpu_peak: float | None = None
    workers_rss_peak: int | None = None
    host_cpu_sum: float = 0.0

    def add(self, frame: dict[str, Any]) -> None:
        """Take one ``RESOURCES`` frame: ``workers`` (their samples) and ``host``."""
        cpu = sum(w["cpu"] for w in frame["workers"])
        rss = sum(w["rss"] for w in frame["workers"])
        self.samples += 1
        self.workers_cpu_sum += cpu
        self.workers_cpu_peak = peak(self.workers_cpu_peak, cpu)
        self.workers_rss_peak = peak(self.workers_rss_peak, rss)
        self.host_cpu_sum += frame["host"]["cpu"]

    def summary(self) -> NodeResourceSummary:
        """The figures as the report shows them (``None`` without a sample)."""
        count = self.samples
        return NodeResourceSummary(
            samples=count,
            workers_cpu_mean=round(self.workers_cpu_sum / count, 1) if count else None,
            workers_cpu_peak=self.workers_cpu_peak,
            workers_rss_peak=self.workers_rss_peak,
            host_cpu_mean=round(self.host_cpu_sum / count, 1) if count else None,
        )
