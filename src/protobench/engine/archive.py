"""What a finished run leaves to keep, and the interface of whoever keeps it.

The engine does not know where runs are kept. The caller hands the
controller an :class:`Archive` (the snapshot store,
:mod:`protobench.snapshots.archive`); once the report is built, the controller
gives it the :class:`RunRecord` (in a worker thread: writing may take a
while) before it publishes ``RunFinished``, and the report says where the
run went (``snapshot``) or why it did not (``snapshot_error``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from protobench.engine.plan import RunPlan
from protobench.engine.report_model import Report
from protobench.engine.resource_log import ResourceRecord
from protobench.engine.series_model import PhaseHistograms, SeriesRecord
from protobench.engine.stacks.model import TargetProfile


@dataclass(frozen=True)
class RunRecord:
    """A finished run: its plan, its report, the interval and resource series, the histograms,
    and the target's profile when it was sampled."""

    plan: RunPlan
    report: Report
    series: list[SeriesRecord]
    histograms: PhaseHistograms
    resources: list[ResourceRecord]
    target_profile: TargetProfile | None = None


@dataclass(frozen=True)
class Kept:
    """Where a run was kept (None: nowhere), and why not where it was meant to be."""

    path: Path | None
    error: str | None = None


class Archive(Protocol):
    """Keeps finished runs; never raises for a place that cannot be written (says so in Kept)."""

    def keep(self, record: RunRecord) -> Kept: ...
