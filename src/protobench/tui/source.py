"""Where the monitor's events come from: the live engine, a snapshot, or a script.

The monitor never reaches into the engine. It reads one :class:`MetricsSource`:
``await source.run(emit)`` calls ``emit(event)`` with the engine's events
(:mod:`protobench.engine.events`) until the run is over, and the command
methods (``pause``, ``resume``, ``set_rate_factor``, ``set_speed``, ``seek``,
``stop``) may be called at any time from the UI's thread; ``controls`` says
which of them mean something for this source.

* :class:`LiveSource` runs a :class:`Controller` in its own thread with its
  own event loop (uvloop), so aggregation, resource sampling and the
  snapshot write never stall the screen, and a failure of the UI cannot lose
  the run: commands cross to the engine's loop as tasks
  (``run_coroutine_threadsafe``).
  ``emit`` is called in the engine's thread.
* :class:`ReplaySource` plays a snapshot's intervals, resource samples and
  notices at their recorded pace divided by ``speed``, with pause and seek.
* :class:`FakeSource` emits a scripted list of events (see
  :mod:`protobench.tui.script`) and records every command in ``commands``,
  like ``httpx.MockTransport``: the double that the monitor's tests use. It
  answers commands as the controller does (a ``pause`` notice, a ``rate``
  notice) and holds ``RunFinished`` back until it is stopped or
  :meth:`FakeSource.finish` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import anyio

from protobench.engine.aggregate import interval_of, total_summary
from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.metrics import OpAccumulator
from protobench.engine.plan import RunPlan
from protobench.engine.report import EXIT_INCOMPLETE, exit_code_for
from protobench.engine.sinks import Each
from protobench.snapshots.archive import stored_controller
from protobench.snapshots.store import SnapshotStore

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
    """A real run: the engine's controller in a thread of its own."""

    kind = "live"

    def __init__(self, plan: RunPlan, store: SnapshotStore, target_pid: int | None = None):
        self.controller = stored_controller(plan, store, target_pid=target_pid)
        self.log_dir: Path | None = self.controller.log_dir
        self.controls = frozenset({"pause", "stop", *(["rate"] if plan.rate is not None else [])})
        self.report: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._emit: Emit | None = None
        self._early: list[Event] = []
        self._ended: Callable[[], None] | None = None

    def start(self) -> None:
        """Start the run now, before the monitor is up: its events wait for :meth:`run`.

        The workers and the target then come up while Textual loads, so the
        first interval is on screen sooner.
        """
        if self._thread is not None:
            return
        self.controller.attach(Each("monitor", self._deliver))
        self._thread = threading.Thread(target=self._engine, name="protobench-engine", daemon=True)
        self._thread.start()

    def _deliver(self, event: Event) -> None:
        with self._lock:
            if self._emit is None:
                self._early.append(event)
                return
            emit = self._emit
        emit(event)

    def _engine(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio", backend_options={"use_uvloop": True})
        except BaseException as exc:  # reported to the UI, never lost in a thread
            self.error = exc
        finally:
            self._done.set()
            with self._lock:
                ended = self._ended
            if ended is not None:
                ended()

    async def run(self, emit: Emit) -> None:
        ui_loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = ui_loop.create_future()

        def resolve() -> None:
            if not finished.done():
                finished.set_result(None)

        def ended() -> None:
            with contextlib.suppress(RuntimeError):  # a closed UI loop: nobody waits
                ui_loop.call_soon_threadsafe(resolve)

        with self._lock:  # the early events first, in order, then the engine's own
            for event in self._early:
                emit(event)
            self._early = []
            self._emit = emit
            self._ended = ended
        self.start()
        if self._done.is_set():
            resolve()
        await finished
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


_ORDER = {RunStarted: 0, IntervalUpdate: 1, ResourceSample: 2, PhaseChanged: 3, Notice: 4}


def replay_timeline(snapshot: dict[str, Any]) -> list[tuple[float, Event]]:
    """A snapshot's events in run-time order, from ``RunStarted`` to ``RunFinished``."""
    plan, report = snapshot["plan"], snapshot["report"]
    corrected = plan.get("model") == "open"
    sessions = {str(g["name"]): int(g.get("count", 0)) for g in plan.get("groups", [])}
    workers = report.get("workers") or []
    timed: list[tuple[float, Event]] = [
        (
            0.0,
            RunStarted(
                plan=plan,
                target=report.get("target", ""),
                target_kind=report.get("target_kind") or "",
                workers=int(report.get("processes", len(workers))),
                sessions_opened=sum(w.get("sessions_opened", 0) for w in workers),
                sessions_failed=sum(w.get("sessions_failed", 0) for w in workers),
                log_dir="",
            ),
        )
    ]
    starts = {
        "warmup": 0.0,
        "sustain": float(plan.get("warmup", 0.0)),
        "drain": float(plan.get("warmup", 0.0)) + float(plan.get("duration", 0.0)),
    }
    seen: set[str] = set()
    for item in snapshot.get("series", []):
        phase = item["phase"]
        if phase not in seen:
            seen.add(phase)
            timed.append((starts.get(phase, 0.0), PhaseChanged(phase, starts.get(phase, 0.0))))
        ops = item["ops"]
        timed.append(
            (
                item["elapsed"],
                IntervalUpdate(
                    phase=phase,
                    index=item["index"],
                    elapsed=item["elapsed"],
                    duration=item["duration"],
                    ops=ops,
                    total=_total(ops, item["duration"], corrected, sessions),
                    lag_ms=item.get("lag_ms", 0.0),
                    inflight=item.get("inflight", 0),
                ),
            )
        )
    for sample in snapshot.get("resources", []):
        timed.append(
            (
                sample["elapsed"],
                ResourceSample(
                    sample["elapsed"], sample["workers"], sample.get("target"), sample["host"]
                ),
            )
        )
    for notice in report.get("notices", []):
        details = {k: v for k, v in notice.items() if k not in ("kind", "message", "elapsed")}
        elapsed = float(notice.get("elapsed", 0.0))
        timed.append((elapsed, Notice(notice["kind"], notice["message"], elapsed, details)))
    timed.sort(key=lambda pair: (pair[0], _ORDER[type(pair[1])]))
    end = timed[-1][0] if timed else 0.0
    timed.append((end, RunFinished(report, exit_code_for(report))))
    return timed


def _total(
    ops: dict[str, dict[str, Any]], seconds: float, corrected: bool, sessions: dict[str, int]
) -> dict[str, Any]:
    """The ``total`` of an interval, merged exactly from its stored operations.

    As the engine's: a latency only across ops of one kind.
    """
    accs: dict[str, OpAccumulator] = {}
    for name, data in ops.items():
        accs[name] = OpAccumulator()
        accs[name].add(interval_of(data))
    kinds = {name: str(data.get("latency_kind", "round_trip")) for name, data in ops.items()}
    return total_summary(accs, kinds, sessions, seconds, corrected)


class ReplaySource:
    """A saved run played back at ``speed`` times its recorded pace."""

    kind = "replay"
    controls = frozenset({"pause", "seek", "speed"})

    def __init__(
        self, snapshot: dict[str, Any], speed: float = 1.0, log_dir: Path | None = None
    ) -> None:
        self.timeline = replay_timeline(snapshot)
        self.snapshot_id = str(snapshot.get("id") or "") or None
        """The replayed snapshot's id (``s`` names the report after it)."""
        self.end = self.timeline[-1][0]
        self.speed = speed
        self.position = 0.0
        self.paused = False
        self.log_dir = log_dir if log_dir is not None and log_dir.is_dir() else _log_dir(snapshot)
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


def _log_dir(snapshot: dict[str, Any]) -> Path | None:
    for worker in snapshot["report"].get("workers") or []:
        log = worker.get("log")
        if log and Path(log).parent.is_dir():
            return Path(log).parent
    return None


class FakeSource:
    """Scripted events for tests; every command is recorded in ``commands``."""

    kind = "fake"

    def __init__(
        self,
        events: Sequence[Event],
        *,
        step: float = 0.0,
        hold: bool = True,
        log_dir: Path | None = None,
        controls: frozenset[str] = frozenset({"pause", "rate", "stop"}),
    ) -> None:
        self.events = list(events)
        self.step = step
        self.hold = hold
        self.log_dir = log_dir
        self.controls = controls
        self.commands: list[tuple[str, Any]] = []
        self.emitted = 0
        self._emit: Emit | None = None
        self._release: asyncio.Event | None = None
        self._stop_reason: str | None = None

    async def run(self, emit: Emit) -> None:
        self._emit = emit
        self._release = asyncio.Event()
        finished = self.events[-1] if isinstance(self.events[-1], RunFinished) else None
        body = self.events[:-1] if finished else self.events
        for event in body:
            if self._stop_reason is not None:
                break
            emit(event)
            self.emitted += 1
            await asyncio.sleep(self.step)
        if finished is None:
            return
        if self.hold and self._stop_reason is None:
            await self._release.wait()
        if self._stop_reason is not None:
            report = {**finished.report, "partial": True, "stop_reason": self._stop_reason}
            finished = RunFinished(report, EXIT_INCOMPLETE)
        emit(finished)
        self.emitted += 1

    def finish(self) -> None:
        """Let the held ``RunFinished`` go (the run completed)."""
        if self._release is not None:
            self._release.set()

    def _notice(self, kind: str, message: str, **details: Any) -> None:
        if self._emit is not None:
            self._emit(Notice(kind, message, 0.0, details))

    def pause(self) -> None:
        self.commands.append(("pause", None))
        self._notice("pause", "load paused")

    def resume(self) -> None:
        self.commands.append(("resume", None))
        self._notice("resume", "load resumed")

    def set_rate_factor(self, factor: float) -> None:
        self.commands.append(("rate", factor))
        self._notice("rate", f"rate factor {factor:.2f}", factor=factor)

    def set_speed(self, speed: float) -> None:
        self.commands.append(("speed", speed))

    def seek(self, seconds: float) -> None:
        self.commands.append(("seek", seconds))

    def stop(self, reason: str) -> None:
        self.commands.append(("stop", reason))
        self._stop_reason = reason
        self.finish()
