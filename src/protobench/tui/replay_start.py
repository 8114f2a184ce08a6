"""A replay's first event: the run as it started, from a snapshot's JSON as read.

It needs neither the typed snapshot (pydantic) nor the engine, so a replay
shows its header (the profile, the target, the load) at once; the snapshot
is checked and the rest of the timeline (:mod:`protobench.tui.timeline`)
computed after that first frame. A JSON whose start does not read as
expected gives ``None``: the checked snapshot's start comes with the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protobench.engine.events import RunStarted


def started(data: Mapping[str, Any]) -> RunStarted | None:
    """The ``RunStarted`` the engine sent for the run a snapshot's JSON ``data`` keeps."""
    plan, report = data.get("plan"), data.get("report")
    if not isinstance(plan, dict) or not isinstance(report, dict):
        return None
    workers = report.get("workers")
    workers = [w for w in workers if isinstance(w, dict)] if isinstance(workers, list) else []
    try:
        return RunStarted(
            plan=plan,
            target=str(report.get("target", "")),
            target_kind=str(report.get("target_kind") or ""),
            workers=int(report.get("processes") or len(workers)),
            sessions_opened=sum(int(w.get("sessions_opened", 0)) for w in workers),
            sessions_failed=sum(int(w.get("sessions_failed", 0)) for w in workers),
            log_dir="",
        )
    except (TypeError, ValueError):
        return None
