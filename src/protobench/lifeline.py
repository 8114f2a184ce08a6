"""Child processes that die with their parent (Linux ``PR_SET_PDEATHSIG``).

A process a run starts (a worker, the embedded target, the broker a target
starts) must not outlive the run, even when the controller is killed with
SIGKILL and cannot stop it. The kernel sends the child SIGKILL when its parent
dies; the request survives ``exec``, so it works for any program. Two ways in:

* :func:`preexec` gives the ``preexec_fn`` of a ``subprocess`` or
  ``asyncio.create_subprocess_exec`` spawn (a non-Python program such as
  mosquitto): ``create_subprocess_exec(..., preexec_fn=preexec())``.
* :func:`child_env` and :func:`die_with_parent`, for Python children spawned
  where no ``preexec_fn`` can be given (``anyio.open_process``): the parent
  puts its PID in the child's environment, and the child calls
  :func:`die_with_parent` first thing in its ``main``.

Either way the child checks that its parent is still the one that spawned it,
so a parent dying during the spawn is caught too. The signal comes when the
*thread* that spawned the child ends: spawn from a thread that lives as long
as the child should (an event loop's thread). Elsewhere than Linux these do
nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

PARENT_ENV = "PROTOBENCH_PARENT_PID"
"""The environment variable that tells a Python child the PID it must die with."""
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with(parent: int) -> None:
    if _libc is None:
        return
    _libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the request: it would never come


def preexec() -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child die with this process."""
    parent = os.getpid()
    return lambda: _die_with(parent)


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment (``env``, else this process's) for a child that dies with this one."""
    return {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}


def die_with_parent() -> None:
    """In a child spawned with :func:`child_env`: die when the parent does (or has)."""
    parent = os.environ.pop(PARENT_ENV, "")
    if parent.isdigit():
        _die_with(int(parent))
