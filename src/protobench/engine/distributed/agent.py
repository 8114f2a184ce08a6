"""The agent of one node: runs its worker processes and streams their frames to the driver.

A :class:`NodeAgent` is a Ray actor pinned to its node (``num_cpus=0``, no
restarts). :meth:`NodeAgent.run` starts ``python -m protobench.engine.worker``
for each slice it is given (as JSON, never a pickle), sends each its ``PLAN``
and yields ``(worker, bytes)`` items: the raw stdout of worker ``worker`` (the
driver decodes the frames), or, for ``worker == AGENT``, one frame of the agent's
own: ``RESOURCES`` (psutil samples of its workers and its host, every
interval) and ``EXIT`` (a worker ended: its exit code and log tail).
:meth:`NodeAgent.control` forwards a control frame to every worker; ``GO``
arrives as a wall-clock instant and leaves as this node's monotonic time.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import platform
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from protobench.engine.frames import FrameKind, encode_frame
from protobench.engine.resources import Sampler
from protobench.hostutil import tail

AGENT = -1
"""The worker index of the agent's own frames."""
STOP_GRACE = 3.0
CHUNK = 256 * 1024


def node_info() -> dict[str, Any]:
    """What the driver checks and records about this node."""
    return {
        "host": socket.gethostname(),
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "protobench": importlib.metadata.version("protobench"),
        "ray": importlib.metadata.version("ray"),
        "pid": os.getpid(),
    }


class NodeAgent:
    """Worker processes of one node, their frames and their resources."""

    def __init__(self) -> None:
        self.processes: dict[int, asyncio.subprocess.Process] = {}
        self.logs: dict[int, Path] = {}

    def info(self) -> dict[str, Any]:
        return node_info()

    def clock(self) -> float:
        """This node's wall clock (for the driver's ping exchange)."""
        return time.time()

    async def run(
        self, slices_json: str, target: str, log_dir: str, interval: float
    ) -> AsyncIterator[tuple[int, bytes]]:
        """Start the workers of ``slices_json`` and yield their output until all have ended."""
        slices: list[dict[str, Any]] = json.loads(slices_json)
        self.processes, self.logs = {}, {}
        logs = _log_dir(Path(log_dir))
        queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        readers = []
        for spec in slices:
            index = int(spec["worker"])
            log_path = self.logs[index] = logs / f"worker-{index}.log"
            with log_path.open("ab") as log:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "protobench.engine.worker",
                    str(log_path),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                )
            self.processes[index] = process
            await self._send(index, FrameKind.PLAN, {"slice": spec, "target": target})
            readers.append(asyncio.create_task(self._read(index, process, queue)))
        sampler = asyncio.create_task(self._sample(queue, interval))
        running = len(readers)
        try:
            while running:
                item = await queue.get()
                if item is None:
                    running -= 1
                    continue
                yield item
        finally:
            sampler.cancel()
            for reader in readers:
                reader.cancel()
            await self.shutdown()

    async def _read(
        self,
        index: int,
        process: asyncio.subprocess.Process,
        queue: asyncio.Queue[tuple[int, bytes] | None],
    ) -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(CHUNK):
            queue.put_nowait((index, chunk))
        code = await process.wait()
        exit_frame = {"worker": index, "exit_code": code, "log_tail": tail(self.logs[index])}
        queue.put_nowait((AGENT, encode_frame(FrameKind.EXIT, exit_frame)))
        queue.put_nowait(None)

    async def _sample(self, queue: asyncio.Queue[tuple[int, bytes] | None], every: float) -> None:
        sampler = Sampler([p.pid for p in self.processes.values()], None)
        while True:
            await asyncio.sleep(every)
            workers, _, host = sampler.sample()
            resources = {"workers": workers, "host": host}
            queue.put_nowait((AGENT, encode_frame(FrameKind.RESOURCES, resources)))

    async def _send(self, index: int, kind: FrameKind, payload: Any) -> None:
        process = self.processes[index]
        if process.stdin is None or process.returncode is not None:
            return
        with contextlib.suppress(OSError):
            process.stdin.write(encode_frame(kind, payload))
            await process.stdin.drain()

    async def control(self, kind: str, payload_json: str) -> None:
        """Send a control frame to every worker; ``GO`` carries a wall-clock ``start_wall``."""
        payload = json.loads(payload_json)
        frame = FrameKind(kind)
        if frame is FrameKind.GO:
            payload = {"start_at": time.monotonic() + payload["start_wall"] - time.time()}
        for index in self.processes:
            await self._send(index, frame, payload)

    def kill(self, indices: list[int]) -> None:
        """Kill workers ``indices`` that still run, now (each one's ``EXIT`` follows)."""
        for index in indices:
            process = self.processes.get(index)
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()

    async def shutdown(self) -> None:
        """Stop every worker still running: STOP, then SIGTERM, then SIGKILL."""
        for index in self.processes:
            await self._send(index, FrameKind.STOP, {})
        for signal_name in ("terminate", "kill"):
            pending = [p for p in self.processes.values() if p.returncode is None]
            if not pending:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(p.wait() for p in pending)), timeout=STOP_GRACE
                )
            for process in pending:
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        getattr(process, signal_name)()


def _log_dir(wanted: Path) -> Path:
    """The run's log directory when this node can write it (the driver's node), else a temp one."""
    try:
        wanted.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path(tempfile.mkdtemp(prefix="protobench-worker-logs-"))
    return wanted
