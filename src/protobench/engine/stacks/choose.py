"""Which tool samples the target: py-spy for a Python process, perf for any other, pprof by URL.

The choice is automatic from the process (a CPython interpreter, or a binary)
unless the plan names the tool; ``pprof`` needs no process, only the URL of a
Go server's ``net/http/pprof`` handlers. When the target cannot be sampled
(no local process, the tool missing, no permission) :func:`choose` says why in
one line, and the run goes on without a profile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from protobench.engine.stacks import perf, pyspy

TOOLS = ("auto", "py-spy", "perf", "pprof")


@dataclass(frozen=True)
class Choice:
    """The tool (``py-spy``, ``perf``, ``pprof``), its executable (pprof: none) and the pid."""

    tool: str
    executable: str | None
    pid: int | None


def is_python(pid: int) -> bool:
    """Whether ``pid`` runs CPython: its executable is ``python*`` or it maps ``libpython``."""
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        exe = ""
    if exe.startswith("python"):
        return True
    try:
        with Path(f"/proc/{pid}/maps").open() as maps:
            return any("libpython" in line for line in maps)
    except OSError:
        return False


def choose(tool: str, pid: int | None, pprof_url: str | None) -> Choice | str:
    """The tool for the target ``pid`` (None: not on this host), or why there is none."""
    if tool == "pprof" or (tool == "auto" and pprof_url):
        if not pprof_url:
            return "the pprof profiler needs the target's pprof URL (--pprof URL)"
        return Choice("pprof", None, pid)
    if pid is None:
        return (
            "no target process on this host to sample (a remote target? give --target-pid, "
            "or --pprof URL for a Go server)"
        )
    if not Path(f"/proc/{pid}").exists():
        return f"the target process (pid {pid}) is gone"
    if tool == "auto":
        tool = "py-spy" if is_python(pid) else "perf"
    if tool == "py-spy":
        executable = pyspy.binary()
        if executable is None:
            return f"py-spy is not installed ({pyspy.INSTALL})"
        return Choice("py-spy", executable, pid)
    why = perf.cannot_run()
    if why is not None:
        return why
    return Choice("perf", perf.binary(), pid)
