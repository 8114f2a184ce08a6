"""The live run's entry point for the CLI: the run under the monitor.

``run_live`` starts the run in the engine's own thread, then loads and opens
the monitor (so the workers come up while Textual loads);
when the monitor closes, for whatever reason, it makes sure the run has
stopped and its snapshot is written before it returns how the run ended
(:class:`Ended`: the exit code, the report, the error): nothing here prints,
the CLI prints the run's summary once the terminal is its own again.

SIGINT and SIGTERM from outside stop the run and close the monitor once its
snapshot is saved (:mod:`protobench.tui.signals`); the exit code is then the
run's own (3: interrupted).

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
import threading
from dataclasses import dataclass
from types import FrameType

from protobench.engine.controller import describe_failure
from protobench.engine.plan import RunPlan
from protobench.engine.pool_contract import PoolFactory
from protobench.engine.report import exit_code_for
from protobench.engine.report_model import Report
from protobench.snapshots.store import SnapshotStore
from protobench.tui.baseline import Baseline
from protobench.tui.live_source import LiveSource
from protobench.tui.signals import STOP_SIGNALS, Ending, handled
from protobench.vocab.exceptions import ExitCode

if importlib.util.find_spec("textual") is None:  # the CLI runs headless instead
    raise ImportError("the monitor needs textual (Textual is imported only when it opens)")

HANGUP_GRACE = 60.0
"""How long a closed terminal's run may take to stop and save before the process ends."""


@dataclass(frozen=True)
class Ended:
    """How a monitored run ended: its exit code, its report, the error that ended it."""

    exit_code: int
    report: Report | None
    error: str | None = None
    """Why the run failed outright (it could not start), in one line."""


def run_live(
    plan: RunPlan,
    store: SnapshotStore,
    target_pid: int | None = None,
    baseline: Baseline | None = None,
    pool_factory: PoolFactory | None = None,
) -> Ended:
    """Run ``plan`` under the monitor (compared with ``baseline``); say how it ended.

    ``pool_factory`` makes the worker pool (the Ray pool of ``--ray``; default
    the local processes). The run starts before Textual is imported: the
    workers and the target come up while the monitor loads.
    """
    source = LiveSource(plan, store, target_pid, pool_factory)
    ending = Ending(source)

    def hangup(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        threading.Thread(target=_end_after_hangup, args=(source,), daemon=True).start()

    with handled({signal.SIGHUP: hangup, **dict.fromkeys(STOP_SIGNALS, ending)}):
        source.start()
        try:
            from protobench.tui.app import MonitorApp  # noqa: PLC0415 - loads while the run starts

            app = MonitorApp(source, store, baseline=baseline)
            ending.attach(app)
            app.run()
        finally:
            if source.running:
                source.stop("interrupted")
            source.join()
    report = source.report
    error = describe_failure(source.error) if source.error is not None else None
    code = exit_code_for(report) if report is not None else ExitCode.INCOMPLETE
    return Ended(code, report, error)


def _end_after_hangup(source: LiveSource) -> None:
    """The terminal is gone: stop the run, wait for its snapshot, end the process (exit 3)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    source.stop("interrupted")
    source.join(HANGUP_GRACE)
    os._exit(ExitCode.INCOMPLETE)
