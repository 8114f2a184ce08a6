"""Events in, throttled messages out: the one path from a source to the screen.

A :class:`Feed` is the ``emit`` callback given to a source. It folds each
event into its :class:`RunModel` at once (in the source's thread), and posts
a fresh :class:`ViewUpdated` at most once per ``refresh`` seconds (a trailing
timer makes sure the newest state is always shown); a phase change, a
notice, the start and the end are posted without delay. Percentiles are
computed when a view is built, so at most ``1 / refresh`` times a second
whatever the rate of events (a replay at ×100 included).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from textual.message import Message

from protobench.engine.events import Event, Notice, PhaseChanged, RunFinished, RunStarted
from protobench.tui.messages import NoticeShown, RunEnded, ViewUpdated
from protobench.tui.model import RunModel

REFRESH = 0.25


class Feed:
    """The ``emit`` callback of a source: model, throttle, messages."""

    def __init__(self, post: Callable[[Message], object], refresh: float = REFRESH) -> None:
        self.model = RunModel()
        self.post = post
        self.refresh = refresh
        self.views = 0
        self._last = -math.inf
        self._timer: asyncio.TimerHandle | None = None

    def __call__(self, event: Event) -> None:
        alerts = self.model.apply(event)
        for alert in alerts:
            self.post(NoticeShown(alert))
        if alerts or isinstance(event, RunStarted | PhaseChanged | Notice | RunFinished):
            self.flush()
        else:
            self._schedule()
        if isinstance(event, RunFinished):
            self.post(RunEnded(event.report, event.exit_code))

    def _schedule(self) -> None:
        wait = self._last + self.refresh - time.monotonic()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Post the view of the model now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last = time.monotonic()
        self.views += 1
        self.post(ViewUpdated(self.model.view()))
