"""The worker processes of a run, forked by one fork server.

The pool starts :mod:`protobench.engine.forkserver` with each worker's pipes:
it imports the worker's modules once and forks the workers (their start-up
overlaps the target's), and tells each worker's PID and exit code
(:class:`ForkedWorker`). :meth:`WorkerPool.start` then sends each worker its
:class:`WorkerSlice` in a ``PLAN`` frame on stdin, and it answers with frames
on stdout (see :mod:`engine.frames`). Its own stdout and stderr go to
``worker-N.log`` in the run's log directory (the server's to ``forkserver.log``).
:meth:`WorkerPool.frames` yields every frame of every worker, then one
``GONE`` per worker when it has said ``BYE`` or died; a worker that died
carries its exit code, its last error and the tail of its log.
:meth:`WorkerPool.shutdown` stops what is left: a ``STOP`` frame, then SIGKILL
after :data:`STOP_GRACE` seconds;
:meth:`WorkerPool.abort` kills every worker at once.

Control frames (``PAUSE``, ``RESUME``, ``RATE``) may be broadcast at any time:
until ``GO`` the pool only remembers the state they ask for, and sends it
right after ``GO``, so a worker always sees ``PLAN``, ``GO``, then controls.

Workers send a frame at least every interval (``BEAT``). Once a worker has
sent one, the pool's watchdog kills it when it stays silent for
:data:`HUNG_INTERVALS` intervals (at least :data:`HUNG_MIN_SECONDS`): stopped
(SIGSTOP) or stuck in a plugin that blocks its loop. Its ``GONE`` carries the
reason, and the run goes on without it. Workers die with the controller
(:mod:`protobench.lifeline`) through the server, even when it is killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup

from protobench.engine.events import ProcessSample
from protobench.engine.frames import CONTROL, FrameKind, encode_frame
from protobench.engine.plan import WorkerSlice
from protobench.engine.pool_base import BaseHandle, BasePool
from protobench.engine.report_model import NodeEntry, WorkerEntry
from protobench.hostutil import tail
from protobench.lifeline import child_env

STOP_GRACE = 1.0
"""Seconds a worker has to end after ``STOP`` in :meth:`WorkerPool.shutdown` before it is killed."""
HUNG_INTERVALS = 3
HUNG_MIN_SECONDS = 2.0


STOPPED = frozenset("Tt")
"""``/proc/PID/stat`` states of a stopped process (by a signal, by a debugger)."""


def process_state(pid: int | None) -> str | None:
    """The state letter of process ``pid`` (``R`` running, ``S`` sleeping, ``T`` stopped...)
    from ``/proc/PID/stat``, or None when it is gone or unknown."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return fields[0] if fields else None


def why_silent(state: str | None) -> str:
    """What a silent worker is doing, from its process state."""
    if state in STOPPED:
        return "stopped (SIGSTOP or a debugger)"
    if state == "R":
        return "its event loop is blocked (busy: a plugin or decoder that does not yield)"
    if state in ("S", "D"):
        return "its event loop is blocked (waiting in a blocking call)"
    return "hung"


class PipeReader:
    """The read end of a worker's stdout pipe, as chunks of bytes until the end."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            await anyio.wait_readable(self.fd)
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                return
            yield data


class PipeWriter:
    """The write end of a worker's stdin pipe; whole frames, one sender at a time."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self._lock = anyio.Lock()

    async def send(self, data: bytes) -> None:
        async with self._lock:
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self.fd, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)


class ForkedWorker:
    """A worker the fork server forked: its pipes, then its PID and exit code as it says them."""

    def __init__(self, stdin: int, stdout: int) -> None:
        self.stdin = PipeWriter(stdin)
        self.stdout = PipeReader(stdout)
        self.pid: int | None = None
        self.returncode: int | None = None
        self._spawned = anyio.Event()
        self._exited = anyio.Event()

    def spawned(self, pid: int) -> None:
        self.pid = pid
        self._spawned.set()

    def exited(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
        self._exited.set()

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.pid is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        for fd in (self.stdin.fd, self.stdout.fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class LocalHandle(BaseHandle):
    """One worker process of this machine and what is known of it."""

    def __init__(self, index: int, process: ForkedWorker, log_path: Path, silence: float) -> None:
        super().__init__(index, log_path)
        self.process = process
        self.silence = silence
        """Seconds without a frame after which the worker is taken for hung."""
        self.last_seen: float | None = None
        """When its last bytes came (``time.monotonic``); None before its first frame."""

    @property
    def running(self) -> bool:
        return self.exit_code is None and self.process.returncode is None

    def kill(self, reason: str) -> None:
        """Kill the process now; ``reason`` becomes its error unless it said BYE."""
        if self.running:
            self.fail(reason)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    def log_tail(self) -> str:
        return tail(self.log_path)

    async def send(self, kind: FrameKind, payload: Any) -> None:
        if self.process.stdin is None or self.exit_code is not None:
            return
        try:
            await self.process.stdin.send(encode_frame(kind, payload))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return


class WorkerPool(BasePool[LocalHandle]):
    """Start, talk to and stop the worker processes of one run."""

    def __init__(self, slices: list[WorkerSlice], log_dir: Path) -> None:
        super().__init__()
        self.slices = slices
        self.log_dir = log_dir
        self._group: TaskGroup | None = None
        self._running = 0
        self._server: Process | None = None
        self._planned: float | None = None
        """When the workers got their plans (``time.monotonic``)."""

    async def __aenter__(self) -> WorkerPool:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        try:
            self._group.start_soon(self._forward_control)
            self._server = await self._spawn()
            self._group.start_soon(self._follow_server, self._server)
            for handle in self.handles:
                self._running += 1
                self._group.start_soon(self._read, handle)
            self._group.start_soon(self._watch)
        except BaseException:
            await self.__aexit__(None, None, None)  # stops the workers already started
            raise
        return self

    async def _spawn(self) -> Process:
        """Start the fork server with every worker's pipe ends; make the handles."""
        ends: list[tuple[int, int, int, int]] = []  # stdin r/w, stdout r/w per worker
        try:
            for _ in self.slices:
                stdin = os.pipe()
                try:
                    stdout = os.pipe()
                except OSError:
                    os.close(stdin[0])
                    os.close(stdin[1])
                    raise
                ends.append((*stdin, *stdout))
            specs = [
                {
                    "index": spec.worker,
                    "stdin": stdin_r,
                    "stdout": stdout_w,
                    "log": str(self.log_dir / f"worker-{spec.worker}.log"),
                }
                for spec, (stdin_r, _, _, stdout_w) in zip(self.slices, ends, strict=True)
            ]
            with (self.log_dir / "forkserver.log").open("ab") as log:
                server = await anyio.open_process(
                    [sys.executable, "-m", "protobench.engine.forkserver", json.dumps(specs)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                    pass_fds=[fd for stdin_r, _, _, stdout_w in ends for fd in (stdin_r, stdout_w)],
                    env=child_env(),
                )
        except BaseException:
            for fd in (fd for four in ends for fd in four):
                os.close(fd)
            raise
        for spec, (stdin_r, stdin_w, stdout_r, stdout_w) in zip(self.slices, ends, strict=True):
            os.close(stdin_r)  # the workers' ends are the server's now
            os.close(stdout_w)
            silence = max(HUNG_MIN_SECONDS, HUNG_INTERVALS * spec.plan.interval)
            log_path = self.log_dir / f"worker-{spec.worker}.log"
            process = ForkedWorker(stdin_w, stdout_r)
            self.handles.append(LocalHandle(spec.worker, process, log_path, silence))
        return server

    async def _follow_server(self, server: Process) -> None:
        """Learn each worker's PID and exit code from the fork server's lines."""
        by_index = {h.index: h for h in self.handles}
        by_pid: dict[int, ForkedWorker] = {}
        buffer = b""
        assert server.stdout is not None
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for chunk in server.stdout:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    word, first, second = line.decode().split()
                    if word == "spawned":
                        handle = by_index[int(first)]
                        handle.pid = int(second)
                        by_pid[int(second)] = handle.process
                        handle.process.spawned(int(second))
                    elif int(first) in by_pid:
                        by_pid[int(first)].exited(int(second))
        code = await server.wait()
        for handle in self.handles:  # the server is gone, and its children with it
            handle.process.exited(code if code < 0 else -signal.SIGKILL)

    async def start(self, target: str) -> None:
        """Send every worker its slice and the target: they open their sessions."""
        for spec, handle in zip(self.slices, self.handles, strict=True):
            await handle.send(FrameKind.PLAN, {"slice": spec.to_dict(), "target": target})
        self._planned = time.monotonic()

    def drop(self, handle: LocalHandle, reason: str) -> None:
        """Kill ``handle``'s worker now; its error says ``reason`` and what its process did."""
        handle.kill(f"{reason}: {why_silent(process_state(handle.pid))}; killed")

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.shutdown()
            if self._server is not None:
                with anyio.move_on_after(STOP_GRACE):
                    await self._server.wait()
                if self._server.returncode is None:
                    self._server.kill()
                    await self._server.wait()
        assert self._group is not None
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(exc_type, exc, tb)
        for handle in self.handles:
            handle.process.close()

    def pids(self) -> list[int]:
        return [h.pid for h in self.handles if h.pid is not None]

    def worker_samples(self) -> list[ProcessSample]:
        """None: the controller samples every worker itself (:meth:`pids`)."""
        return []

    async def _forward_control(self) -> None:
        """Write broadcast frames in order; controls before ``GO`` are held, then sent after it."""
        paused = False
        factor: float | None = None
        started = False
        async for kind, payload in self._control_receive:
            frames: list[tuple[FrameKind, Any]] = [(kind, payload)]
            if kind in CONTROL:
                if kind is FrameKind.RATE:
                    factor = float(payload["factor"])
                else:
                    paused = kind is FrameKind.PAUSE
                if not started:
                    continue
            elif kind is FrameKind.GO:
                started = True
                if paused:
                    frames.append((FrameKind.PAUSE, {}))
                if factor is not None:
                    frames.append((FrameKind.RATE, {"factor": factor}))
            for handle in self.handles:
                for frame_kind, frame_payload in frames:
                    if handle.exit_code is None:
                        await handle.send(frame_kind, frame_payload)

    async def _watch(self) -> None:
        """Kill a worker silent for longer than its ``silence``: stopped, or its loop blocked."""
        period = min((h.silence for h in self.handles), default=HUNG_MIN_SECONDS) / 4
        while True:
            before = time.monotonic()
            await anyio.sleep(period)
            now = time.monotonic()
            stalled = now - before > 2 * period
            for handle in self.handles:
                if stalled:  # this loop itself was late: frames may be waiting unread
                    if handle.last_seen is not None:
                        handle.last_seen = max(handle.last_seen, now - period)
                elif (reason := self._silent(handle, now)) is not None:
                    handle.kill(reason)

    def _silent(self, handle: LocalHandle, now: float) -> str | None:
        """Why ``handle``'s worker is to be killed as silent, or None.

        Silent since its last frame, or since its plan when it has sent none: before its
        first frame a worker may still be importing its plugin, so only a stopped one is.
        """
        since = handle.last_seen if handle.last_seen is not None else self._planned
        if since is None or handle.said_bye or not handle.running:
            return None
        if now - since <= handle.silence:
            return None
        state = process_state(handle.pid)
        if handle.last_seen is None and state not in STOPPED:
            return None
        return f"no report for {now - since:.0f} s: {why_silent(state)}; killed"

    async def _read(self, handle: LocalHandle) -> None:
        stdout = handle.process.stdout
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            async for chunk in stdout:
                handle.last_seen = time.monotonic()
                if not await self._output(handle, chunk):
                    break
        handle.exit_code = await handle.process.wait()
        handle.fail(f"exited with code {handle.exit_code}")
        self._running -= 1
        last = self._running == 0
        await self._gone(handle)
        if last:
            await self._send.aclose()

    async def shutdown(self) -> None:
        """Stop every worker still running: STOP, then SIGKILL after :data:`STOP_GRACE` s."""
        running = [h for h in self.handles if h.running]
        for handle in running:
            with anyio.move_on_after(STOP_GRACE / 4):
                await handle.send(FrameKind.STOP, {})
        with anyio.move_on_after(STOP_GRACE):
            for handle in running:
                await handle.process.wait()
        self.abort(f"did not stop within {STOP_GRACE:g} s; killed")
        for handle in running:
            await handle.process.wait()

    def abort(self, reason: str = "killed: the run was stopped at once") -> None:
        """Kill every worker still running now (a second interrupt); the fork server too
        while it has not forked them all (its children die with it)."""
        for handle in self.handles:
            handle.kill(reason)
        unborn = any(h.pid is None and h.running for h in self.handles)
        if unborn and self._server is not None and self._server.returncode is None:
            self._server.kill()

    def summary(self) -> list[WorkerEntry]:
        return [h.entry(h.process.returncode) for h in self.handles]

    def nodes(self) -> list[NodeEntry] | None:
        """None: every worker ran on this machine."""
        return None
