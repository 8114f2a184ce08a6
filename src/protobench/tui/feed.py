"""Events in, throttled messages out: the one path from a source to the screen.

A :class:`Feed` is the ``emit`` callback given to a source. It folds each
event into its :class:`RunModel` at once (in the source's thread), and posts
a fresh :class:`ViewUpdated` at most once per ``refresh`` seconds (a trailing
timer makes sure the newest state is always shown); a phase change, a
notice, the start, the run's first interval (the first figures on screen:
an early-started run delivers it right after the start) and the end are
posted without delay, and a resource
sample waits for the next interval (at most one interval), so a run redraws
about once per interval. Percentiles are
computed when a view is built, so at most ``1 / refresh`` times a second
whatever the rate of events (a replay at ×100 included).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from textual.message import Message

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.tui.messages import NoticeShown, RunEnded, ViewUpdated
from protobench.tui.model import RunModel

REFRESH = 0.25
HOLD = 4
"""A resource sample waits up to HOLD refresh periods (at most one interval) to be
shown with the next interval: one redraw a second instead of two."""


class Feed:
    """The ``emit`` callback of a source: model, throttle, messages."""

    def __init__(self, post: Callable[[Message], object], refresh: float = REFRESH) -> None:
        self.model = RunModel()
        self.post = post
        self.refresh = refresh
        self.views = 0
        self._last = -math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._figures = False
        """An interval was shown already (the first one is posted at once)."""

    def __call__(self, event: Event) -> None:
        alerts = self.model.apply(event)
        for alert in alerts:
            self.post(NoticeShown(alert))
        first = isinstance(event, IntervalUpdate) and not self._figures
        self._figures = first or (self._figures and not isinstance(event, RunStarted))
        if first or alerts or isinstance(event, RunStarted | PhaseChanged | Notice | RunFinished):
            self.flush()
        elif isinstance(event, ResourceSample):
            info = self.model.info
            self._schedule(hold=min(info.interval if info else 1.0, HOLD * self.refresh))
        else:
            self._schedule()
        if isinstance(event, RunFinished):
            self.post(RunEnded(event.report, event.exit_code))

    @property
    def pending(self) -> bool:
        """A view is due on the timer."""
        return self._timer is not None

    def _schedule(self, hold: float = 0.0) -> None:
        now = time.monotonic()
        due = max(self._last + self.refresh, now + hold)
        if due <= now:
            self.flush()
            return
        if self._timer is not None and self._due <= due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._due = due
        self._timer = loop.call_later(due - now, self.flush)

    def flush(self) -> None:
        """Post the view of the model now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last = time.monotonic()
        self.views += 1
        self.post(ViewUpdated(self.model.view()))
