"""Where the monitor's events come from: the live engine or a snapshot.

The monitor never reaches into the engine. It reads one :class:`MetricsSource`:
``await source.run(emit)`` calls ``emit(event)`` with the engine's events
(:mod:`protobench.engine.events`) until the run is over, always on the
running (the UI's) loop, in the source's task, and the command
methods (``pause``, ``resume``, ``set_rate_factor``, ``set_speed``, ``seek``,
``stop``) may be called at any time from the UI's thread; ``controls`` says
which of them mean something for this source.

* :class:`LiveSource` runs a :class:`Controller` in its own thread with its
  own event loop (uvloop), so aggregation, resource sampling and the
  snapshot write never stall for the screen, and a UI whose terminal is gone
  (its loop blocked) cannot lose the run: events cross to the UI's loop
  through a bounded :class:`~protobench.tui.handover.Handover`, commands to
  the engine's loop as tasks (``run_coroutine_threadsafe``).
* :class:`ReplaySource` plays a snapshot's events (:mod:`protobench.tui.timeline`:
  those the engine sent, recomputed by its own code) at their recorded pace
  divided by ``speed``, with pause and seek.

The tests' double, a scripted source, is ``tests.support.fake_source.FakeSource``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import anyio

from protobench.engine.events import Event, RunFinished
from protobench.engine.plan import RunPlan
from protobench.engine.pool_contract import PoolFactory
from protobench.engine.report_model import Report
from protobench.engine.sinks import Each
from protobench.snapshots.archive import stored_controller
from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotStore
from protobench.tui.handover import Handover
from protobench.tui.timeline import replay_timeline

Emit = Callable[[Event], None]


class MetricsSource(Protocol):
    """A stream of run events and the commands that act on it."""

    kind: str
    """``live``, ``replay`` or ``fake``."""
    controls: frozenset[str]
    """The commands that act: ``pause``, ``rate``, ``stop``, ``seek``, ``speed``."""
    log_dir: Path | None
    """Where the worker and target logs are, when there are any."""

    async def run(self, emit: Emit) -> None:
        """Call ``emit`` with every event of the run; return when it is over."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def set_rate_factor(self, factor: float) -> None:
        """Scale the open-model rate (1.0 = the plan's)."""

    def set_speed(self, speed: float) -> None:
        """Playback speed of a replay."""

    def seek(self, seconds: float) -> None:
        """Move a replay forwards or backwards by ``seconds`` of run time."""

    def stop(self, reason: str) -> None:
        """End the run early; the report is marked partial and the snapshot saved."""


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


class ReplaySource:
    """A saved run played back at ``speed`` times its recorded pace."""

    kind = "replay"
    controls = frozenset({"pause", "seek", "speed"})

    def __init__(self, snapshot: Snapshot, speed: float = 1.0, log_dir: Path | None = None) -> None:
        self.timeline = replay_timeline(snapshot)
        self.snapshot_id: str | None = snapshot.id or None
        """The replayed snapshot's id (``s`` names the report after it)."""
        self.end = self.timeline[-1][0]
        self.speed = speed
        self.position = 0.0
        self.paused = False
        finished = self.timeline[-1][1]
        assert isinstance(finished, RunFinished)
        self.report = finished.report
        """The replayed run's report."""
        self.log_dir = (
            log_dir if log_dir is not None and log_dir.is_dir() else _log_dir(self.report)
        )
        self._index = 0
        self._seeks = 0
        self._wake: asyncio.Event | None = None

    async def run(self, emit: Emit) -> None:
        self._wake = asyncio.Event()
        while True:
            while self._index < len(self.timeline) and self.timeline[self._index][0] <= (
                self.position + 1e-9
            ):
                emit(self.timeline[self._index][1])
                self._index += 1
            self._wake.clear()
            if self.paused or self._index >= len(self.timeline):
                await self._wake.wait()
                continue
            due = self.timeline[self._index][0]
            before, seeks, speed = self.position, self._seeks, self.speed
            started = time.monotonic()
            with anyio.move_on_after((due - before) / speed):
                await self._wake.wait()
            if self._seeks != seeks:
                continue
            if self._wake.is_set():
                self.position = min(due, before + (time.monotonic() - started) * speed)
            else:
                self.position = due

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def pause(self) -> None:
        self.paused = True
        self._poke()

    def resume(self) -> None:
        self.paused = False
        self._poke()

    def set_rate_factor(self, factor: float) -> None:
        del factor

    def set_speed(self, speed: float) -> None:
        self.speed = min(max(speed, 0.125), 1000.0)
        self._poke()

    def seek(self, seconds: float) -> None:
        target = min(max(self.position + seconds, 0.0), self.end)
        if target < self.position:
            self._index = 0
        self.position = target
        self._seeks += 1
        self._poke()

    def stop(self, reason: str) -> None:
        del reason


def _log_dir(report: Report) -> Path | None:
    for worker in report.workers:
        if worker.log and Path(worker.log).parent.is_dir():
            return Path(worker.log).parent
    return None
