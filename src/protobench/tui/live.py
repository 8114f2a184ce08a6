"""Entry points of the monitor for the CLI: a live run and a replay.

``run_live`` starts the run in the engine's own thread, then loads and opens
the monitor (so the workers come up while Textual loads);
when the monitor closes, for whatever reason, it makes sure the run has
stopped and its snapshot is written before it returns the exit code. Nothing
here prints while Textual owns the terminal; after it, two plain lines say
how the run ended and where its snapshot is.

SIGHUP (the terminal was closed) does not go through the monitor, whose
output thread dies on the vanished terminal and then blocks it: a thread
points the standard streams at ``/dev/null``, stops the run, waits for its
snapshot (the target and workers are stopped by then) and ends the process
with exit code 3.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sys
import threading
from types import FrameType

from protobench.engine.controller import PoolFactory, describe_failure
from protobench.engine.plan import RunPlan
from protobench.engine.report import EXIT_INCOMPLETE, exit_code_for
from protobench.engine.report_model import Report
from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotStore
from protobench.tui.baseline import Baseline
from protobench.tui.source import LiveSource, ReplaySource

if importlib.util.find_spec("textual") is None:  # the CLI runs headless instead
    raise ImportError("the monitor needs textual (Textual is imported only when it opens)")

HANGUP_GRACE = 60.0
"""How long a closed terminal's run may take to stop and save before the process ends."""


def run_live(
    plan: RunPlan,
    store: SnapshotStore,
    target_pid: int | None = None,
    baseline: Baseline | None = None,
    pool_factory: PoolFactory | None = None,
) -> int:
    """Run ``plan`` under the monitor (compared with ``baseline``); return the exit code.

    ``pool_factory`` makes the worker pool (the Ray pool of ``--ray``; default
    the local processes). The run starts before Textual is imported: the
    workers and the target come up while the monitor loads.
    """
    source = LiveSource(plan, store, target_pid, pool_factory)

    def hangup(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        threading.Thread(target=_end_after_hangup, args=(source,), daemon=True).start()

    signal.signal(signal.SIGHUP, hangup)
    source.start()
    try:
        from protobench.tui.app import MonitorApp  # noqa: PLC0415 - loads while the run starts

        app = MonitorApp(source, store, handle_signals=True, baseline=baseline)
        code = app.run()
    finally:
        if source.running:
            source.stop("interrupted")
        source.join()
    report = source.report
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has no stdout
        if report is not None:
            partial = f" (partial: {report.stop_reason})" if report.partial else ""
            sys.stdout.write(f"protobench: run {report.profile} ended{partial}\n")
            if report.snapshot_error:
                sys.stderr.write(f"protobench: {report.snapshot_error}\n")
            else:
                sys.stdout.write(f"snapshot {report.snapshot}\n")
        if source.error is not None:
            sys.stderr.write(f"protobench: error: {describe_failure(source.error)}\n")
    if code is not None:
        return code
    return _exit_code(report)


def _end_after_hangup(source: LiveSource) -> None:
    """The terminal is gone: stop the run, wait for its snapshot, end the process (exit 3)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    source.stop("interrupted")
    source.join(HANGUP_GRACE)
    os._exit(EXIT_INCOMPLETE)


def _exit_code(report: Report | None) -> int:
    return exit_code_for(report) if report is not None else EXIT_INCOMPLETE


def run_replay(
    snapshot: Snapshot,
    store: SnapshotStore,
    speed: float = 1.0,
    baseline: Baseline | None = None,
) -> int:
    """Play a snapshot in the monitor (compared with ``baseline``) until the user quits."""
    from protobench.tui.app import MonitorApp  # noqa: PLC0415 - as run_live

    log_dir = store.logs_of(snapshot.id)
    source = ReplaySource(snapshot, speed, log_dir)
    app = MonitorApp(source, store, speed=speed, baseline=baseline)
    app.run()
    return 0
