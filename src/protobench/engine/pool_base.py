"""What every worker pool does the same way, wherever its workers run.

:class:`BaseHandle` is what a pool knows of one worker (a
:class:`~protobench.engine.pool_contract.WorkerHandle`): it decodes the
worker's output and records what its frames say (``HELLO``, ``BYE``,
``ERROR``; a ``BEAT`` only says the worker is alive, and goes no further).
:class:`BasePool` holds the handles, the stream of frames the controller
reads (each ``HELLO`` kept back, one ``GONE`` per worker) and the queue of
frames broadcast to the workers; how frames reach the workers and how their
output comes back is each pool's own (:mod:`protobench.engine.pool` on this
machine, :mod:`protobench.engine.distributed.pool` on a Ray cluster).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio

from protobench.engine.frames import FrameDecoder, FrameError, FrameKind
from protobench.engine.pool_contract import Frame, Hello
from protobench.engine.report_model import WorkerEntry

FRAMES_BUFFER = 10_000
"""Frames the controller may fall behind by before a pool's readers wait for it."""
CONTROLS_BUFFER = 1_000
"""Broadcast frames queued before the oldest are dropped (a control is tiny and rare)."""
HELLO_POLL = 0.02
"""Seconds between two looks at which workers have said ``HELLO``."""
DROP_GRACE = 5.0
"""Seconds :meth:`BasePool.wait_hello` waits for the workers it dropped to be gone."""


class BaseHandle(abc.ABC):
    """One worker and what its frames said of it."""

    def __init__(self, index: int, log_path: Path) -> None:
        self.index = index
        self.log_path = log_path
        self.pid: int | None = None
        self.hello: Hello | None = None
        self.said_bye = False
        self.error: str | None = None
        self.exit_code: int | None = None
        self.gone = False
        """Its ``GONE`` went to the controller: it ended, or its node was lost."""
        self.decoder = FrameDecoder()

    def fail(self, reason: str) -> None:
        """``reason`` becomes its error, unless it said ``BYE`` or failed already."""
        if not self.said_bye and self.error is None:
            self.error = reason

    def take(self, kind: FrameKind, payload: Any) -> bool:
        """Record what a frame says of the worker; False for a frame that goes no further."""
        if kind is FrameKind.BEAT:
            return False
        if kind is FrameKind.HELLO:
            self.hello = cast(Hello, payload)
        elif kind is FrameKind.BYE:
            self.said_bye = True
        elif kind is FrameKind.ERROR:
            self.error = payload.get("message", "unknown error")
        return True

    @abc.abstractmethod
    def log_tail(self) -> str:
        """The last lines of its log."""

    def entry(self, exit_code: int | None) -> WorkerEntry:
        """Its entry in the report's ``workers``."""
        hello = self.hello
        return WorkerEntry(
            worker=self.index,
            pid=self.pid,
            exit_code=exit_code,
            completed=self.said_bye,
            error=self.error,
            sessions_opened=hello.get("opened", 0) if hello else 0,
            sessions_failed=hello.get("failed", 0) if hello else 0,
            log=str(self.log_path),
        )


class BasePool[H: BaseHandle](abc.ABC):
    """The handles of a run's workers, their frames to the controller and its broadcasts."""

    def __init__(self) -> None:
        self.handles: list[H] = []
        self._send, self._receive = anyio.create_memory_object_stream[Frame](FRAMES_BUFFER)
        self._control_send, self._control_receive = anyio.create_memory_object_stream[
            tuple[FrameKind, Any]
        ](CONTROLS_BUFFER)

    @property
    def live(self) -> set[int]:
        return {h.index for h in self.handles if not h.gone and not h.said_bye}

    def broadcast(self, kind: FrameKind, payload: Any) -> None:
        """Queue a frame for every live worker.

        Safe from any code on the controller's event loop, a bare callback
        included; the pool's forwarding task sends the frames in order.
        """
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
            self._control_send.send_nowait((kind, payload))

    async def wait_hello(self, stop: anyio.Event, grace: float) -> list[Hello]:
        """Wait until every worker said ``HELLO`` (and its pid is known) or is gone.

        A worker that has not said it within ``grace`` seconds is dropped
        (:meth:`drop`) and waited for: the others go on without it.
        """
        with anyio.move_on_after(grace):
            await self._until_hello(stop)
        late = [h for h in self.handles if not (h.gone or self._said_hello(h))]
        if late and not stop.is_set():
            for handle in late:
                self.drop(handle, f"did not open its sessions within {grace:.0f} s")
            with anyio.move_on_after(DROP_GRACE):
                await self._until_hello(stop)
        return [h.hello for h in self.handles if h.hello is not None]

    @staticmethod
    def _said_hello(handle: H) -> bool:
        return handle.hello is not None and handle.pid is not None

    async def _until_hello(self, stop: anyio.Event) -> None:
        while not stop.is_set():
            if all(h.gone or self._said_hello(h) for h in self.handles):
                return
            await anyio.sleep(HELLO_POLL)

    @abc.abstractmethod
    def drop(self, handle: H, reason: str) -> None:
        """Kill ``handle``'s worker now; its error is ``reason`` (and what the pool knows
        of why); its ``GONE`` follows."""

    async def frames(self) -> AsyncIterator[Frame]:
        """Every frame after ``HELLO``, then ``GONE`` per worker; ends when all are gone."""
        async for frame in self._receive:
            if frame[1] is not FrameKind.HELLO:
                yield frame

    async def _output(self, handle: H, data: bytes) -> bool:
        """Decode a chunk of a worker's output and pass its frames on; False (and the
        worker's error says so) when the worker's frames are broken."""
        try:
            frames = handle.decoder.feed(data)
        except FrameError as exc:
            handle.error = f"broken frames: {exc}"
            return False
        for kind, payload in frames:
            if handle.take(kind, payload):
                await self._send.send((handle, kind, payload))
        return True

    async def _gone(self, handle: H) -> None:
        """Tell the controller, once, that ``handle``'s worker ended."""
        if not handle.gone:
            handle.gone = True
            await self._send.send((handle, FrameKind.GONE, None))
