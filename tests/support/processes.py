"""The processes of a run started by a test: its workers are the fork server's children."""

from __future__ import annotations

import psutil

FORKSERVER = "protobench.engine.forkserver"


def workers_of(pid: int) -> list[psutil.Process]:
    """The worker processes of the controller ``pid`` (forked by its fork server)."""
    return [
        child
        for child in psutil.Process(pid).children(recursive=True)
        if FORKSERVER in " ".join(child.cmdline()) and child.ppid() != pid
    ]
