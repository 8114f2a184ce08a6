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
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from protobench.engine.frames import FrameDecoder, FrameError, encode_frame
from protobench.engine.plan import WorkerSlice
from protobench.engine.report_model import WorkerEntry
from protobench.hostutil import tail
from protobench.lifeline import child_env

Frame = tuple["WorkerHandle", str, Any]
CONTROL = frozenset({"PAUSE", "RESUME", "RATE"})
STOP_GRACE = 1.0
"""Seconds a worker has to end after ``STOP`` in :meth:`WorkerPool.shutdown` before it is killed."""
HUNG_INTERVALS = 3
HUNG_MIN_SECONDS = 2.0


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


class WorkerHandle:
    """One worker process and what is known of it."""

    def __init__(self, index: int, process: ForkedWorker, log_path: Path, silence: float) -> None:
        self.index = index
        self.process = process
        self.log_path = log_path
        self.silence = silence
        """Seconds without a frame after which the worker is taken for hung."""
        self.hello: dict[str, Any] | None = None
        self.said_bye = False
        self.error: str | None = None
        self.exit_code: int | None = None
        self.last_seen: float | None = None
        """When its last bytes came (``time.monotonic``); None before its first frame."""

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.exit_code is None and self.process.returncode is None

    def kill(self, reason: str) -> None:
        """Kill the process now; ``reason`` becomes its error unless it said BYE."""
        if self.running:
            if not self.said_bye and self.error is None:
                self.error = reason
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    def log_tail(self) -> str:
        return tail(self.log_path)

    async def send(self, kind: str, payload: Any) -> None:
        if self.process.stdin is None or self.exit_code is not None:
            return
        try:
            await self.process.stdin.send(encode_frame(kind, payload))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return


def worker_summary(handle: Any, exit_code: int | None) -> WorkerEntry:
    """One worker's entry in the report's ``workers`` (a local or a remote handle)."""
    hello = handle.hello or {}
    return WorkerEntry(
        worker=handle.index,
        pid=handle.pid,
        exit_code=exit_code,
        completed=handle.said_bye,
        error=handle.error,
        sessions_opened=hello.get("opened", 0),
        sessions_failed=hello.get("failed", 0),
        log=str(handle.log_path),
    )


class WorkerPool:
    """Start, talk to and stop the worker processes of one run."""

    def __init__(self, slices: list[WorkerSlice], log_dir: Path) -> None:
        self.slices = slices
        self.log_dir = log_dir
        self.handles: list[WorkerHandle] = []
        self._group: TaskGroup | None = None
        self._send: MemoryObjectSendStream[Frame]
        self._receive: MemoryObjectReceiveStream[Frame]
        self._send, self._receive = anyio.create_memory_object_stream[Frame](10_000)
        self._control_send, self._control_receive = anyio.create_memory_object_stream[
            tuple[str, Any]
        ](1_000)
        self._running = 0
        self._server: Process | None = None

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
            self.handles.append(WorkerHandle(spec.worker, process, log_path, silence))
        return server

    async def _follow_server(self, server: Process) -> None:
        """Learn each worker's PID and exit code from the fork server's lines."""
        by_index = {h.index: h.process for h in self.handles}
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
                        by_pid[int(second)] = by_index[int(first)]
                        by_index[int(first)].spawned(int(second))
                    elif int(first) in by_pid:
                        by_pid[int(first)].exited(int(second))
        code = await server.wait()
        for handle in self.handles:  # the server is gone, and its children with it
            handle.process.exited(code if code < 0 else -signal.SIGKILL)

    async def start(self, target: str) -> None:
        """Send every worker its slice and the target: they open their sessions."""
        for spec, handle in zip(self.slices, self.handles, strict=True):
            await handle.send("PLAN", {"slice": spec.to_dict(), "target": target})

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

    @property
    def live(self) -> set[int]:
        return {h.index for h in self.handles if h.exit_code is None and not h.said_bye}

    def pids(self) -> list[int]:
        return [h.pid for h in self.handles if h.pid is not None]

    def broadcast(self, kind: str, payload: Any) -> None:
        """Queue a control frame for every live worker.

        Safe from any code on the controller's event loop, a bare callback
        included; a forwarding task writes the frames in order.
        """
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
            self._control_send.send_nowait((kind, payload))

    async def _forward_control(self) -> None:
        """Write broadcast frames in order; controls before ``GO`` are held, then sent after it."""
        paused = False
        factor: float | None = None
        started = False
        async for kind, payload in self._control_receive:
            frames: list[tuple[str, Any]] = [(kind, payload)]
            if kind in CONTROL:
                if kind == "RATE":
                    factor = float(payload["factor"])
                else:
                    paused = kind == "PAUSE"
                if not started:
                    continue
            elif kind == "GO":
                started = True
                if paused:
                    frames.append(("PAUSE", {}))
                if factor is not None:
                    frames.append(("RATE", {"factor": factor}))
            for handle in self.handles:
                for frame_kind, frame_payload in frames:
                    if handle.exit_code is None:
                        await handle.send(frame_kind, frame_payload)

    async def _watch(self) -> None:
        """Kill a worker silent for longer than its ``silence`` (hung or stopped)."""
        period = min((h.silence for h in self.handles), default=HUNG_MIN_SECONDS) / 4
        while True:
            before = time.monotonic()
            await anyio.sleep(period)
            now = time.monotonic()
            stalled = now - before > 2 * period
            for handle in self.handles:
                if handle.last_seen is None or handle.said_bye or not handle.running:
                    continue
                if stalled:
                    # this loop itself was late: frames may be waiting unread
                    handle.last_seen = max(handle.last_seen, now - period)
                elif now - handle.last_seen > handle.silence:
                    handle.kill(
                        f"no report for {now - handle.last_seen:.0f} s: hung (SIGSTOP?); killed"
                    )

    async def _read(self, handle: WorkerHandle) -> None:
        decoder = FrameDecoder()
        stdout = handle.process.stdout
        assert stdout is not None
        try:
            async for chunk in stdout:
                handle.last_seen = time.monotonic()
                for kind, payload in decoder.feed(chunk):
                    if kind == "BEAT":
                        continue
                    if kind == "HELLO":
                        handle.hello = payload
                    elif kind == "BYE":
                        handle.said_bye = True
                    elif kind == "ERROR":
                        handle.error = payload.get("message", "unknown error")
                    await self._send.send((handle, kind, payload))
        except FrameError as exc:
            handle.error = f"broken frames: {exc}"
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        handle.exit_code = await handle.process.wait()
        if not handle.said_bye and handle.error is None:
            handle.error = f"exited with code {handle.exit_code}"
        self._running -= 1
        last = self._running == 0
        await self._send.send((handle, "GONE", None))
        if last:
            await self._send.aclose()

    async def wait_hello(self, stop: anyio.Event) -> list[dict[str, Any]]:
        """Wait until every worker said HELLO or died; return the HELLO payloads."""
        while not stop.is_set():
            pending = [
                h
                for h in self.handles
                if (h.hello is None or h.pid is None) and h.exit_code is None
            ]
            if not pending:
                break
            await anyio.sleep(0.02)
        return [h.hello for h in self.handles if h.hello is not None]

    async def frames(self) -> AsyncIterator[Frame]:
        """Every frame after HELLO, then GONE per worker; ends when all are gone."""
        async for frame in self._receive:
            if frame[1] != "HELLO":
                yield frame

    async def shutdown(self) -> None:
        """Stop every worker still running: STOP, then SIGKILL after :data:`STOP_GRACE` s."""
        running = [h for h in self.handles if h.running]
        for handle in running:
            with anyio.move_on_after(STOP_GRACE / 4):
                await handle.send("STOP", {})
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
        return [worker_summary(h, h.process.returncode) for h in self.handles]
