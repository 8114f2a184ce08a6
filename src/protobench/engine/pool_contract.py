"""The worker pool's contract: what the controller asks of a pool and of each worker's handle.

A run's workers live in a :class:`Pool`, made by a :data:`PoolFactory` from the
run's slices and its log directory: :class:`protobench.engine.pool.WorkerPool`
(processes forked on this machine, the default) or
:class:`protobench.engine.distributed.pool.RayPool` (processes on the nodes of
a Ray cluster); both share :mod:`protobench.engine.pool_base`. The controller
drives any pool the same way, in this order:

1. ``async with factory(slices, log_dir) as pool``: the workers start (their
   imports overlap the target's start);
2. :meth:`Pool.start`: every worker gets its slice and the target, and opens
   its sessions; :meth:`Pool.wait_hello` returns once each has said ``HELLO``
   (:class:`Hello`) or is gone (a worker still silent at the deadline is killed, and
   the run goes on with the others);
3. :meth:`Pool.broadcast` sends ``GO`` with the common start, then controls
   (``PAUSE``, ``RESUME``, ``RATE``) and ``STOP`` at any time, from any code on
   the controller's loop, never waiting;
4. :meth:`Pool.frames` yields every worker's frames after ``HELLO``
   (:data:`Frame`: ``STATS``, ``ERROR``, ``BYE``, the pool's own ``NOTICE``)
   and one ``GONE`` per worker when it ended, whatever ended it; it ends when
   every worker is gone;
5. :meth:`Pool.shutdown` stops what is left (``STOP``, then a kill);
   :meth:`Pool.abort` kills every worker at once (a second Ctrl-C); leaving
   the ``async with`` leaves no process behind.

Meanwhile the controller samples :meth:`Pool.pids` itself and takes
:meth:`Pool.worker_samples` from the pool (workers it cannot see), and at the
end puts :meth:`Pool.summary` and :meth:`Pool.nodes` in the report.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, NotRequired, Protocol, Self, TypedDict

import anyio

from protobench.engine.events import ProcessSample
from protobench.engine.frames import FrameKind
from protobench.engine.plan import WorkerSlice
from protobench.engine.report_model import NodeEntry, WorkerEntry


class Hello(TypedDict):
    """A worker's ``HELLO``: its process, how many of its sessions opened or failed, and
    where their times come from (:func:`~protobench.engine.report.clock_report`)."""

    pid: int
    opened: int
    failed: int
    clock: NotRequired[dict[str, dict[str, int]]]
    """Per group: its open ``sessions`` and how many read the kernel's receive
    (``kernel_receive``) and send (``kernel_send``) stamps."""
    clock_reason: NotRequired[str]
    """Why the platform gives no kernel stamps, when the run asked for them."""
    protocols: NotRequired[dict[str, dict[str, int]]]
    """Per group: its open sessions by the protocol they got (:attr:`Session.negotiated
    <protobench.protocols.base.Session.negotiated>`), for plugins that name one."""


class WorkerHandle(Protocol):
    """What the controller reads of one worker, wherever it runs."""

    @property
    def index(self) -> int:
        """The worker's index in the run (its slice's), the same on every node."""
        ...

    @property
    def pid(self) -> int | None:
        """Its process id once known."""
        ...

    @property
    def hello(self) -> Hello | None:
        """Its ``HELLO`` once it said it."""
        ...

    @property
    def said_bye(self) -> bool:
        """It finished its run and said ``BYE``."""
        ...

    @property
    def error(self) -> str | None:
        """Why it failed (one line), if it did."""
        ...

    @property
    def exit_code(self) -> int | None:
        """Its exit code once it ended (minus the signal that killed it)."""
        ...

    def log_tail(self) -> str:
        """The last lines of its log (for a notice of its failure)."""
        ...


Frame = tuple[WorkerHandle | None, FrameKind, Any]
"""One frame from a pool: the worker it came from (None: the pool's own ``NOTICE``), its
kind and its payload (JSON)."""


class Pool(Protocol):
    """The workers of one run, as the controller drives them (see the module's docstring)."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    @property
    def handles(self) -> Sequence[WorkerHandle]:
        """Every worker of the run, in index order."""
        ...

    @property
    def live(self) -> set[int]:
        """The indices of the workers neither gone nor finished."""
        ...

    async def start(self, target: str) -> None:
        """Send every worker its slice and the target URL: they open their sessions."""
        ...

    async def wait_hello(self, stop: anyio.Event, grace: float) -> list[Hello]:
        """Wait until every worker said ``HELLO`` or is gone (or ``stop`` is set); kill
        those still silent after ``grace`` seconds (their ``GONE`` says why)."""
        ...

    def broadcast(self, kind: FrameKind, payload: Any) -> None:
        """Queue a frame for every live worker, in order; never waits."""
        ...

    def frames(self) -> AsyncIterator[Frame]:
        """Every frame after ``HELLO``, and ``GONE`` once per worker; ends when all are gone."""
        ...

    async def shutdown(self) -> None:
        """Stop every worker still running: ``STOP``, then kill those that do not end."""
        ...

    def abort(self, reason: str = ...) -> None:
        """Kill every worker still running, now; ``reason`` becomes its error."""
        ...

    def pids(self) -> list[int]:
        """The workers this machine can sample itself."""
        ...

    def worker_samples(self) -> list[ProcessSample]:
        """The latest samples of the workers this machine cannot see (each marked with its
        node), empty when it sees them all."""
        ...

    def summary(self) -> list[WorkerEntry]:
        """Every worker's entry in the report."""
        ...

    def nodes(self) -> list[NodeEntry] | None:
        """The nodes the workers ran on, for the report (None: this machine only)."""
        ...


PoolFactory = Callable[[list[WorkerSlice], Path], Pool]
"""Makes a run's pool from its worker slices and its log directory."""
