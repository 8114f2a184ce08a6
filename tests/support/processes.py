"""Processes of the tests: a run's workers (the fork server's children), peer servers."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

FORKSERVER = "protobench.engine.forkserver"


def workers_of(pid: int) -> list[psutil.Process]:
    """The worker processes of the controller ``pid`` (forked by its fork server)."""
    return [
        child
        for child in psutil.Process(pid).children(recursive=True)
        if FORKSERVER in " ".join(child.cmdline()) and child.ppid() != pid
    ]


@contextmanager
def peer_process(
    name: str, args: list[str], log: Path, ports: Iterable[int], within: float
) -> Iterator[subprocess.Popen[bytes]]:
    """A server we did not write, run as ``args`` with its output in ``log``: yielded once
    each of ``ports`` on 127.0.0.1 accepts a connection (else ``RuntimeError`` with the log's
    tail), stopped at the end (SIGTERM, then SIGKILL)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + within
        for port in ports:
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start: {log.read_text()[-2000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
