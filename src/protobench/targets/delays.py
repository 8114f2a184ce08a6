"""Delayed work on an embedded target's event loop: released on time, each exactly once.

An embedded target with a delay (``serve http --delay``, ``serve ws --delay``,
the Beckn BPP's callbacks) queues work with :meth:`DelayLine.call_at`, at an
absolute ``time.monotonic_ns()`` due time. The line keeps a heap of due times
(ties in queueing order) behind **one** timer, with one rule:

    whenever the heap is not empty, the timer is armed for its earliest due time.

:meth:`~DelayLine.call_at` re-arms when the new item is the earliest; when the
timer fires, every item whose due time has passed is released (a callback that
raises is reported to the loop's exception handler, the rest still run) and the
timer is re-armed for the new earliest. So every item is released exactly once,
never before its due time (an early wake-up releases nothing and re-arms), and
no later than the timer's wake-up plus the loop's turn.

On Linux the timer is a ``timerfd`` armed at the absolute time on
``CLOCK_MONOTONIC`` and read by the loop (no timer slack: it wakes within tens
of microseconds). Elsewhere it is ``loop.call_later``, which uvloop rounds to
whole milliseconds: still never early, but up to about a millisecond late.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import os
import time
from collections.abc import Callable
from typing import Any

_HAS_TIMERFD = hasattr(os, "timerfd_create")


class DelayLine:
    """Callbacks released at their due times on one event loop (see the module)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, timerfd: bool = _HAS_TIMERFD) -> None:
        self._loop = loop
        self._heap: list[tuple[int, int, Callable[..., object], tuple[Any, ...]]] = []
        self._order = itertools.count()
        self._armed: int | None = None
        """The due time the timer is armed for (None: not armed)."""
        self._handle: asyncio.TimerHandle | None = None
        self._fd = -1
        if timerfd:
            self._fd = os.timerfd_create(
                time.CLOCK_MONOTONIC, flags=os.TFD_NONBLOCK | os.TFD_CLOEXEC
            )
            loop.add_reader(self._fd, self._fired)

    def __len__(self) -> int:
        """Items queued and not yet released."""
        return len(self._heap)

    def call_at(self, due_ns: int, callback: Callable[..., object], *args: Any) -> None:
        """Call ``callback(*args)`` on the loop at ``due_ns`` (``time.monotonic_ns``) or just
        after, never before; items due at the same time run in the order queued."""
        heapq.heappush(self._heap, (due_ns, next(self._order), callback, args))
        if self._armed is None or due_ns < self._armed:
            self._arm(due_ns)

    def sleep_until(self, due_ns: int) -> asyncio.Future[None]:
        """A future done at ``due_ns`` or just after (cancelling it is allowed)."""
        future: asyncio.Future[None] = self._loop.create_future()
        self.call_at(due_ns, _resolve, future)
        return future

    def close(self) -> None:
        """Drop what is queued and release the timer."""
        self._heap.clear()
        self._armed = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1

    def _arm(self, due_ns: int) -> None:
        self._armed = due_ns
        if self._fd >= 0:
            os.timerfd_settime_ns(self._fd, flags=os.TFD_TIMER_ABSTIME, initial=due_ns)
            return
        if self._handle is not None:
            self._handle.cancel()
        wait = max(due_ns - time.monotonic_ns(), 0) / 1e9
        self._handle = self._loop.call_later(wait, self._fired)

    def _fired(self) -> None:
        if self._fd >= 0:
            # BlockingIOError: re-armed after it expired; the pass below finds what is due.
            with contextlib.suppress(BlockingIOError):
                os.read(self._fd, 8)
        self._handle = None
        self._armed = None
        heap = self._heap
        now = time.monotonic_ns()
        while heap and heap[0][0] <= now:
            _, _, callback, args = heapq.heappop(heap)
            try:
                callback(*args)
            except Exception as exc:  # one failing item must not stop the rest
                self._loop.call_exception_handler(
                    {"message": "delayed callback failed", "exception": exc}
                )
        if heap and (self._armed is None or heap[0][0] < self._armed):
            self._arm(heap[0][0])


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
