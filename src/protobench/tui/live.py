"""Entry points of the monitor for the CLI: a live run and a replay.

``run_live`` starts the run in the engine's own thread, then loads and opens
the monitor (so the workers come up while Textual loads);
when the monitor closes, for whatever reason, it makes sure the run has
stopped and its snapshot is written before it returns the exit code. Nothing
here prints while Textual owns the terminal; after it, two plain lines say
how the run ended and where its snapshot is.

SIGINT and SIGTERM from outside (the Ctrl-C key is a key in the monitor, not
a signal) stop the run and close the monitor once its snapshot is saved; the
exit code is then the run's own (3: interrupted). They are caught from the
moment the run starts, so one that lands while Textual loads is not a
``KeyboardInterrupt`` (exit 130) or a kill that skips the snapshot. In a
replay they close the viewer, like ``q``.

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
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

from protobench.engine.controller import describe_failure
from protobench.engine.plan import RunPlan
from protobench.engine.pool_contract import PoolFactory
from protobench.engine.report import exit_code_for
from protobench.engine.report_model import Report
from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotStore
from protobench.termtext import echo
from protobench.tui.baseline import Baseline
from protobench.tui.source import LiveSource, ReplaySource
from protobench.vocab.exceptions import ExitCode

if importlib.util.find_spec("textual") is None:  # the CLI runs headless instead
    raise ImportError("the monitor needs textual (Textual is imported only when it opens)")

if TYPE_CHECKING:
    from protobench.tui.app import MonitorApp

Handler = Callable[[int, FrameType | None], None]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals from outside that end a monitored run (or a replay) early."""
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
    ending = _Ending(source)

    def hangup(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        threading.Thread(target=_end_after_hangup, args=(source,), daemon=True).start()

    with _handled({signal.SIGHUP: hangup, **dict.fromkeys(STOP_SIGNALS, ending)}):
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
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has no stdout
        if report is not None:
            partial = f" (partial: {report.stop_reason})" if report.partial else ""
            echo(f"protobench: run {report.profile} ended{partial}")
            if report.snapshot_error:
                echo(f"protobench: {report.snapshot_error}", err=True)
            else:
                echo(f"snapshot {report.snapshot}")
        if source.error is not None:
            echo(f"protobench: error: {describe_failure(source.error)}", err=True)
    return _exit_code(report)


class _Ending:
    """The handler of :data:`STOP_SIGNALS`: stop the run (if live), close the app when it ends.

    It runs in the main thread wherever that thread is (maybe inside a
    command to the source, which holds the source's lock), so the stop goes
    through a thread of its own and the app is only flagged and woken.
    """

    def __init__(self, source: LiveSource | None) -> None:
        self.source = source
        self.app: MonitorApp | None = None
        self.received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        del signum, frame
        self.received = True
        if self.source is not None:
            threading.Thread(target=self.source.stop, args=("interrupted",), daemon=True).start()
        if self.app is not None:
            self.app.end_on_signal()

    def attach(self, app: MonitorApp) -> None:
        """The monitor is made: a signal from now on (or one already received) closes it."""
        self.app = app
        if self.received:
            app.end_on_signal()


@contextlib.contextmanager
def _handled(handlers: dict[signal.Signals, Handler]) -> Iterator[None]:
    """Install ``handlers`` for the block; the previous ones are back after it."""
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run_closed_by_signals(app: MonitorApp) -> None:
    """Run a replay's ``app``: SIGINT and SIGTERM close it as ``q`` does."""
    ending = _Ending(None)
    ending.attach(app)
    with _handled(dict.fromkeys(STOP_SIGNALS, ending)):
        app.run()


def _end_after_hangup(source: LiveSource) -> None:
    """The terminal is gone: stop the run, wait for its snapshot, end the process (exit 3)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    source.stop("interrupted")
    source.join(HANGUP_GRACE)
    os._exit(ExitCode.INCOMPLETE)


def _exit_code(report: Report | None) -> int:
    return exit_code_for(report) if report is not None else ExitCode.INCOMPLETE


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
    _run_closed_by_signals(app)
    return 0
