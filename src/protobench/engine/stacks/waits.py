"""Which sampled stacks are a thread waiting rather than running (the ``idle`` flag).

py-spy records every thread at every tick (``--idle``) but does not say in its
output which ones were waiting, so the leaf frame decides: a blocking system
call's wrapper (native frames: ``epoll_wait``, ``clock_nanosleep``, a futex
wait...) or a Python frame that only waits (``selectors``' ``select``,
``threading``'s ``wait``, and the event loop's ``run`` when the loop is
uvloop's C code, whose time outside Python is almost all ``epoll_wait``).
Without native frames a thread in ``time.sleep`` shows its caller as the
leaf and counts as running; ``native = true`` tells them apart exactly.
"""

from __future__ import annotations

from protobench.engine.stacks.model import Frame

NATIVE_WAITS = frozenset(
    {
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "poll",
        "__poll",
        "ppoll",
        "select",
        "__select",
        "pselect",
        "pselect6",
        "clock_nanosleep",
        "__clock_nanosleep",
        "nanosleep",
        "__nanosleep",
        "__futex_abstimed_wait_common",
        "__futex_abstimed_wait_common64",
        "futex_wait",
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "__pthread_cond_wait",
        "__pthread_cond_timedwait",
        "sem_wait",
        "sem_timedwait",
        "sem_clockwait",
        "do_futex_wait",
        "accept",
        "accept4",
        "sigwait",
        "sigtimedwait",
        "sigwaitinfo",
        "pause",
        "wait4",
        "waitpid",
    }
)
"""Native leaf functions that block the thread."""

PYTHON_WAITS = frozenset(
    {
        ("select", "selectors.py"),
        ("wait", "threading.py"),
        ("Runner.run", "asyncio/runners.py"),
    }
)
"""Python leaf frames ``(function, file ending)`` that wait for I/O, a lock or the loop."""


def is_wait(leaf: Frame) -> bool:
    """Whether a stack whose leaf is ``leaf`` is a waiting thread."""
    if leaf.name in NATIVE_WAITS and not leaf.file.endswith(".py"):
        return True
    return any(leaf.name == name and leaf.file.endswith(file) for name, file in PYTHON_WAITS)
