"""A replay's first event: the run as it started, from a snapshot's plan and report.

It needs nothing but the typed snapshot, so a replay shows its header (the
profile, the target, the load) at once; the rest of the timeline
(:mod:`protobench.tui.timeline`, which loads the engine's aggregation and
judge) is computed after that first frame.
"""

from __future__ import annotations

from protobench.engine.events import RunStarted
from protobench.engine.report_model import to_plain
from protobench.snapshots.model import Snapshot


def started(snapshot: Snapshot) -> RunStarted:
    """The ``RunStarted`` the engine sent for the run ``snapshot`` keeps."""
    report = snapshot.report
    return RunStarted(
        plan=to_plain(snapshot.plan),
        target=report.target,
        target_kind=report.target_kind or "",
        workers=report.processes or len(report.workers),
        sessions_opened=sum(w.sessions_opened for w in report.workers),
        sessions_failed=sum(w.sessions_failed for w in report.workers),
        log_dir="",
    )
