"""Signals from outside that end the monitor: SIGINT and SIGTERM, for a live run and a replay.

The Ctrl-C key is a key in the monitor, not a signal; a ``kill -INT`` or
``kill -TERM`` from outside stops a live run (which then closes the monitor
once its snapshot is saved) or closes a replay, like ``q``. The handlers are
installed from the moment the run starts, so one that lands while Textual
loads is not a ``KeyboardInterrupt`` (exit 130) or a kill that skips the
snapshot.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protobench.tui.app import MonitorApp
    from protobench.tui.source import MetricsSource

Handler = Callable[[int, FrameType | None], None]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals from outside that end a monitored run (or a replay) early."""


class Ending:
    """The handler of :data:`STOP_SIGNALS`: stop the run (if live), close the app when it ends.

    It runs in the main thread wherever that thread is (maybe inside a
    command to the source, which holds the source's lock), so the stop goes
    through a thread of its own and the app is only flagged and woken.
    """

    def __init__(self, source: MetricsSource | None) -> None:
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
def handled(handlers: dict[signal.Signals, Handler]) -> Iterator[None]:
    """Install ``handlers`` for the block; the previous ones are back after it."""
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
