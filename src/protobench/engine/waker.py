"""Sleeping until a ``perf_counter_ns`` deadline with microsecond precision, without spinning.

The open model issues each request at its intended time. ``asyncio.sleep``
cannot wait that precisely: uvloop rounds a timer to whole milliseconds and
runs one due in less than half a millisecond at once, so a driver sleeping
125 µs between arrivals (8,000/s) never blocked and burned a whole core.

:class:`Waker` arms a Linux ``timerfd`` at the absolute deadline on
``CLOCK_MONOTONIC`` (the clock of ``time.perf_counter_ns``) and waits for it to
become readable in the event loop, so the process sleeps in ``epoll`` and
wakes within the kernel's timer slack, which the worker lowers to 1 µs
(:func:`tighten_timer_slack`). A deadline closer than :data:`YIELD_NS` is
waited for by yielding to the loop until it passes (a wake-up costs more).
:meth:`Waker.wake` ends a timer sleep early (the open model's driver, asleep
while every session is busy, is woken when one frees). Where ``timerfd`` is
missing (not Linux), it falls back to ``asyncio.sleep``, which cannot be woken
early.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import sys
import time
from typing import Final

YIELD_NS: Final = 50_000
"""Deadlines closer than this are not slept for: the loop is yielded to until they pass."""
PR_SET_TIMERSLACK: Final = 29
TIMER_SLACK_NS: Final = 1_000

perf_ns = time.perf_counter_ns


def tighten_timer_slack() -> None:
    """Let this process's timers fire within 1 µs of their deadline (Linux; default 50 µs)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0)


class Waker:
    """Awaitable absolute deadlines on one event loop (one waiter at a time)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[None] | None = None
        self._woken = False
        self._fd = -1
        if hasattr(os, "timerfd_create"):
            self._fd = os.timerfd_create(
                time.CLOCK_MONOTONIC, flags=os.TFD_NONBLOCK | os.TFD_CLOEXEC
            )
            self._loop.add_reader(self._fd, self._fired)

    async def sleep_until(self, deadline_ns: int) -> None:
        """Return at ``deadline_ns`` (``perf_counter_ns`` time) or just after, never before,
        unless :meth:`wake` ends the sleep first."""
        wait = deadline_ns - perf_ns()
        if wait < YIELD_NS:
            while perf_ns() < deadline_ns:  # noqa: ASYNC110 - under 50 µs: yield, no timer
                await asyncio.sleep(0)
            return
        if self._fd < 0:
            await asyncio.sleep(wait / 1e9)
            return
        os.timerfd_settime_ns(self._fd, flags=os.TFD_TIMER_ABSTIME, initial=deadline_ns)
        self._woken = False
        while not self._woken and perf_ns() < deadline_ns:
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def wake(self) -> None:
        """End the current timer sleep now (a deadline under :data:`YIELD_NS` is kept)."""
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fired(self) -> None:
        try:
            os.read(self._fd, 8)
        except BlockingIOError:
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
