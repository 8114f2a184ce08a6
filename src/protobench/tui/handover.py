"""Events from the engine's thread to the UI's loop, through a bounded buffer.

The live engine runs on a thread and loop of its own; the monitor reads on
the UI's loop. :meth:`Handover.offer` (engine side) never waits: it queues
the event and wakes the reader. The buffer is bounded like every sink's
(:data:`LIMIT`): past that many queued ``interval`` and ``resources``
events the oldest is dropped, so the newest figures win (each interval
carries its phase so far, so a dropped one loses only a chart point); the
start, phase changes, notices and the end are never dropped; just before
the end comes one ``monitor`` notice saying how many were left out. Events
offered before the reader comes wait for it. :meth:`Handover.events` yields them, in
order, on the reader's loop, until :meth:`Handover.close` and the buffer
is empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

from protobench.engine.events import Event, Notice, RunFinished
from protobench.engine.sinks import LOSSY_LIMIT, LossyQueue

LIMIT = LOSSY_LIMIT
"""Queued interval and resource events kept for a reader that falls behind (as a sink's)."""


class Handover:
    """A bounded, thread-safe queue of events read on one asyncio loop."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._queue = LossyQueue(limit)
        self._closed = False
        self._lock = threading.Lock()
        self._reader: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    @property
    def pending(self) -> tuple[Event, ...]:
        """The events not read yet."""
        with self._lock:
            return self._queue.pending()

    def offer(self, event: Event) -> None:
        """Queue ``event`` from any thread; never waits."""
        with self._lock:
            self._queue.put(event)
        self._wake()

    @property
    def lost(self) -> int:
        """Interval and resource events dropped because the reader fell behind."""
        return self._queue.lost

    def close(self) -> None:
        """No more events: :meth:`events` ends once the buffer is read."""
        with self._lock:
            self._closed = True
        self._wake()

    def _wake(self) -> None:
        reader = self._reader
        if reader is not None:
            loop, ready = reader
            with contextlib.suppress(RuntimeError):  # the reader's loop is closed
                loop.call_soon_threadsafe(ready.set)

    async def events(self) -> AsyncIterator[Event]:
        """Every event, in order, on the running loop, until closed and read."""
        ready = asyncio.Event()
        self._reader = (asyncio.get_running_loop(), ready)
        while True:
            with self._lock:
                batch, closed = self._queue.take_all(), self._closed
            for event in batch:
                if isinstance(event, RunFinished) and self.lost:
                    yield Notice(
                        "monitor",
                        f"{self.lost} interval and resource events were left out: "
                        "the screen did not keep up",
                        0.0,
                        {"lost": self.lost},
                    )
                yield event
            if closed and not batch:
                return
            if not batch:
                await ready.wait()
                ready.clear()
