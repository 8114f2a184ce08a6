"""A callback at a ``perf_counter_ns`` deadline with microsecond precision, without spinning.

The open model issues each request at its intended time. The event loop's own
timers cannot wait that precisely: uvloop rounds a timer to whole milliseconds
and runs one due in less than half a millisecond at once, so a driver sleeping
125 µs between arrivals (8,000/s) never blocked and burned a whole core.

:class:`Timer` arms a Linux ``timerfd`` at the absolute deadline on
``CLOCK_MONOTONIC`` (the clock of ``time.perf_counter_ns``) and calls its
callback from the event loop when the descriptor becomes readable, so the
process sleeps in ``epoll`` and wakes within the kernel's timer slack, which
the worker lowers to 1 µs (:func:`tighten_timer_slack`). The callback runs
straight from the loop's poll: no future, no task switch, and no ``read`` of
the descriptor (re-arming it, or disarming it, clears its readiness), so a
wake-up costs one ``epoll_wait`` return and one ``timerfd_settime``. Where
``timerfd`` is missing (not Linux) it falls back to the loop's ``call_later``,
which may call back early or up to a millisecond late: the caller checks the
time it is called at.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Callable
from typing import Final

PR_SET_TIMERSLACK: Final = 29
TIMER_SLACK_NS: Final = 1_000

perf_ns = time.perf_counter_ns


def tighten_timer_slack() -> None:
    """Let this process's timers fire within 1 µs of their deadline (Linux; default 50 µs)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0)


class Timer:
    """One deadline at a time on the running loop; ``callback()`` runs when it passes.

    ``deadline`` is the armed deadline (``perf_counter_ns``), 0 while disarmed;
    it is 0 again when the callback runs, which may arm the next one.
    """

    def __init__(self, callback: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._callback = callback
        self.deadline = 0
        self._handle: asyncio.TimerHandle | None = None
        self._fd = -1
        if hasattr(os, "timerfd_create"):
            self._fd = os.timerfd_create(
                time.CLOCK_MONOTONIC, flags=os.TFD_NONBLOCK | os.TFD_CLOEXEC
            )
            self._loop.add_reader(self._fd, self._fired)

    def arm(self, deadline_ns: int) -> None:
        """Call back at ``deadline_ns`` or just after (a past deadline: at the next poll)."""
        self.deadline = deadline_ns
        if self._fd >= 0:
            os.timerfd_settime_ns(self._fd, flags=os.TFD_TIMER_ABSTIME, initial=deadline_ns)
            return
        if self._handle is not None:
            self._handle.cancel()
        wait = max(0, deadline_ns - perf_ns()) / 1e9
        self._handle = self._loop.call_later(wait, self._fired)

    def disarm(self) -> None:
        """No callback until the next :meth:`arm`."""
        self.deadline = 0
        if self._fd >= 0:
            os.timerfd_settime_ns(self._fd, initial=0)
        elif self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fired(self) -> None:
        if self.deadline:
            self.deadline = 0
            self._callback()
        if not self.deadline and self._fd >= 0:
            os.timerfd_settime_ns(self._fd, initial=0)  # not re-armed: clear the readiness

    def close(self) -> None:
        self.disarm()
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
