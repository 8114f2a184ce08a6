"""Resource sampling with psutil: the worker processes, the target process, the host.

The target process is the embedded target's serving process, the ``--target-pid``
given, or the process listening on the target's port when the target is on this
machine (:func:`find_listener`). Every figure is the process's own: a broker's
memory per connection comes from the broker's RSS, never from the generator's.
"""

from __future__ import annotations

import contextlib
import socket
from urllib.parse import urlsplit

import psutil

from protobench.engine.events import HostSample, ProcessSample
from protobench.hostutil import is_loopback_host


def _process(pid: int | None) -> psutil.Process | None:
    if pid is None:
        return None
    try:
        process = psutil.Process(pid)
        process.cpu_percent(None)
    except psutil.Error:
        return None
    return process


def sample_process(process: psutil.Process) -> ProcessSample | None:
    """CPU (% of one core since the last sample), RSS, threads, fds and their limit."""
    try:
        with process.oneshot():
            data: ProcessSample = {
                "pid": process.pid,
                "cpu": round(process.cpu_percent(None), 1),
                "rss": process.memory_info().rss,
                "threads": process.num_threads(),
            }
            with contextlib.suppress(psutil.Error):
                data["fds"] = process.num_fds()
                data["fd_limit"] = process.rlimit(psutil.RLIMIT_NOFILE)[0]
            return data
    except psutil.Error:
        return None


class Sampler:
    """Samples a fixed set of worker processes, an optional target and the host."""

    def __init__(self, worker_pids: list[int], target_pid: int | None) -> None:
        self.workers = [p for p in (_process(pid) for pid in worker_pids) if p is not None]
        self.target = _process(target_pid)
        psutil.cpu_percent(None)

    def sample(self) -> tuple[list[ProcessSample], ProcessSample | None, HostSample]:
        workers = [s for s in (sample_process(p) for p in self.workers) if s is not None]
        target = sample_process(self.target) if self.target is not None else None
        memory = psutil.virtual_memory()
        host: HostSample = {
            "cpu": round(psutil.cpu_percent(None), 1),
            "cpus": psutil.cpu_count() or 1,
            "mem_used": memory.total - memory.available,
            "mem_total": memory.total,
        }
        return workers, target, host


def target_rss(pid: int | None) -> int | None:
    """The RSS of a process now, or None."""
    process = _process(pid)
    if process is None:
        return None
    try:
        return int(process.memory_info().rss)
    except psutil.Error:
        return None


def find_listener(target: str) -> int | None:
    """PID of the local process bound to the target URL's port, if it is on loopback."""
    parts = urlsplit(target)
    host, port = parts.hostname, parts.port
    if host is None or port is None or not is_loopback_host(host):
        return None
    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.Error:
        return None
    for conn in connections:
        if not conn.laddr or conn.laddr.port != port or conn.pid is None:
            continue
        listening = conn.status == psutil.CONN_LISTEN
        datagram = conn.type == socket.SOCK_DGRAM
        if listening or datagram:
            return int(conn.pid)
    return None
