"""Processes of the tests: a run's workers (the fork server's children), peer servers;
a run's peak memory is that of its whole process tree."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from tests.support.cli import CliResult

FORKSERVER = "protobench.engine.forkserver"
MiB = 1024 * 1024


def workers_of(pid: int) -> list[psutil.Process]:
    """The worker processes of the controller ``pid`` (forked by its fork server)."""
    return [
        child
        for child in psutil.Process(pid).children(recursive=True)
        if FORKSERVER in " ".join(child.cmdline()) and child.ppid() != pid
    ]


def tree_rss(root: psutil.Process) -> int:
    """The resident bytes of ``root`` and every process under it (0 once it is gone)."""
    total = 0
    try:
        for proc in (root, *root.children(recursive=True)):
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return 0
    return total


def run_watched(args: list[str], cwd: Path, timeout: float = 120.0) -> tuple[CliResult, int]:
    """Run ``python -m protobench ARGS`` in ``cwd``; its output and the peak RSS of its
    process tree (controller, fork server, workers), sampled every 20 ms."""
    out, err = cwd / "watched.out", cwd / "watched.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "protobench", *args],
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        root = psutil.Process(proc.pid)
        peak = 0
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(args, timeout)
                peak = max(peak, tree_rss(root))
                time.sleep(0.02)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return CliResult(proc.returncode, out.read_text(), err.read_text()), peak


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
