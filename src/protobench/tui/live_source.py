"""The live engine as the monitor's source: the controller on a thread and loop of its own.

:class:`LiveSource` runs a :class:`~protobench.engine.controller.Controller` in
its own thread with its own event loop (uvloop), so aggregation, resource
sampling and the snapshot write never stall for the screen, and a UI whose
terminal is gone (its loop blocked) cannot lose the run: events cross to the
UI's loop through a bounded :class:`~protobench.tui.handover.Handover`,
commands to the engine's loop as tasks (``run_coroutine_threadsafe``). It is
imported by :func:`protobench.tui.live.run_live` alone, so a replay never loads
the engine's controller.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from protobench.engine.plan import RunPlan
from protobench.engine.pool_contract import PoolFactory
from protobench.engine.report_model import Report
from protobench.engine.sinks import Each
from protobench.snapshots.archive import stored_controller
from protobench.snapshots.store import SnapshotStore
from protobench.tui.handover import Handover
from protobench.tui.source import Emit


class LiveSource:
    """A real run: the engine's controller on a thread and loop of its own.

    Its events cross to the UI's loop through a :class:`Handover`; commands
    cross the other way as tasks of the engine's loop.
    """

    kind = "live"

    def __init__(
        self,
        plan: RunPlan,
        store: SnapshotStore,
        target_pid: int | None = None,
        pool_factory: PoolFactory | None = None,
    ):
        self.controller = stored_controller(
            plan, store, target_pid=target_pid, pool_factory=pool_factory
        )
        self.log_dir: Path | None = self.controller.log_dir
        self.controls = frozenset({"pause", "stop", *(["rate"] if plan.rate is not None else [])})
        self.report: Report | None = None
        self.error: BaseException | None = None
        self.handover = Handover()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the run now, before the monitor is up: its events wait for :meth:`run`.

        The workers and the target then come up while Textual loads, so the
        first interval is on screen sooner.
        """
        if self._thread is not None:
            return
        self.controller.attach(Each("monitor", self.handover.offer))
        self._thread = threading.Thread(target=self._engine, name="protobench-engine", daemon=True)
        self._thread.start()

    def _engine(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio", backend_options={"use_uvloop": True})
        except BaseException as exc:  # reported to the UI, never lost in a thread
            self.error = exc
        finally:
            self._done.set()
            self.handover.close()

    async def run(self, emit: Emit) -> None:
        self.start()
        async for event in self.handover.events():
            emit(event)
        if self.error is not None:
            raise self.error

    async def _main(self) -> None:
        with self._lock:
            self._loop = asyncio.get_running_loop()
            pending, self._pending = self._pending, []
        for command in pending:
            command()
        self.report = await self.controller.run()

    def _call(self, command: Callable[..., None], *args: Any) -> None:
        with self._lock:
            if self._loop is None:
                self._pending.append(partial(command, *args))
                return
            loop = self._loop
        if not self._done.is_set():
            # In a task of the engine's loop: the controller's commands start
            # tasks in its task groups, which a bare loop callback cannot do.
            asyncio.run_coroutine_threadsafe(_invoke(command, *args), loop)

    def pause(self) -> None:
        self._call(self.controller.pause)

    def resume(self) -> None:
        self._call(self.controller.resume)

    def set_rate_factor(self, factor: float) -> None:
        self._call(self.controller.set_rate_factor, factor)

    def set_speed(self, speed: float) -> None:
        del speed

    def seek(self, seconds: float) -> None:
        del seconds

    def stop(self, reason: str) -> None:
        self._call(self.controller.stop, reason)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._done.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run (and its snapshot) to finish; ``False`` on timeout."""
        if self._thread is None:
            return True
        return self._done.wait(timeout)


async def _invoke(command: Callable[..., None], *args: Any) -> None:
    command(*args)
