"""Entry points of the monitor for the CLI: a live run and a replay.

``run_live`` starts the run in the engine's own thread and opens the monitor;
when the monitor closes, for whatever reason, it makes sure the run has
stopped and its snapshot is written before it returns the exit code. Nothing
here prints while Textual owns the terminal; after it, two plain lines say
how the run ended and where its snapshot is.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from protobench.engine.controller import describe_failure
from protobench.engine.plan import RunPlan
from protobench.engine.report import EXIT_INCOMPLETE, exit_code_for
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.source import LiveSource, ReplaySource


def run_live(plan: RunPlan, store: SnapshotStore, target_pid: int | None = None) -> int:
    """Run ``plan`` under the monitor; return the run's exit code."""
    source = LiveSource(plan, store, target_pid)
    app = MonitorApp(source, store, handle_signals=True)
    try:
        code = app.run()
    finally:
        if source.running:
            source.stop("interrupted")
        source.join()
    report = source.report
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has no stdout
        if report is not None:
            partial = f" (partial: {report.get('stop_reason')})" if report.get("partial") else ""
            sys.stdout.write(f"protobench: run {report.get('profile')} ended{partial}\n")
            if report.get("snapshot_error"):
                sys.stderr.write(f"protobench: {report['snapshot_error']}\n")
            else:
                sys.stdout.write(f"snapshot {report.get('snapshot')}\n")
        if source.error is not None:
            sys.stderr.write(f"protobench: error: {describe_failure(source.error)}\n")
    if code is not None:
        return code
    return _exit_code(report)


def _exit_code(report: dict[str, Any] | None) -> int:
    return exit_code_for(report) if report is not None else EXIT_INCOMPLETE


def run_replay(snapshot: dict[str, Any], store: SnapshotStore, speed: float = 1.0) -> int:
    """Play a snapshot in the monitor until the user quits."""
    log_dir = store.directory.parent / "logs" / str(snapshot.get("id", ""))
    app = MonitorApp(ReplaySource(snapshot, speed, log_dir), store, speed=speed)
    app.run()
    return 0
