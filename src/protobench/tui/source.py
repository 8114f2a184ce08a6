"""Where the monitor's events come from: the live engine or a snapshot.

The monitor never reaches into the engine. It reads one :class:`MetricsSource`:
``await source.run(emit)`` calls ``emit(event)`` with the engine's events
(:mod:`protobench.engine.events`) until the run is over, always on the
running (the UI's) loop, in the source's task, and the command
methods (``pause``, ``resume``, ``set_rate_factor``, ``set_speed``, ``seek``,
``stop``) may be called at any time from the UI's thread; ``controls`` says
which of them mean something for this source.

* :class:`~protobench.tui.live_source.LiveSource` runs the engine's controller
  in a thread of its own (its module is imported by a live run alone).
* :class:`ReplaySource` plays a snapshot's events (:mod:`protobench.tui.timeline`:
  those the engine sent, recomputed by its own code) at their recorded pace
  divided by ``speed``, with pause and seek. It sends the run's start at once
  and computes the rest in a thread, so the first frame does not wait for it.

The tests' double, a scripted source, is ``tests.support.fake_source.FakeSource``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from protobench.engine.events import Event
from protobench.engine.report_model import Report, to_plain
from protobench.snapshots.model import Snapshot
from protobench.tui.replay_start import started

Emit = Callable[[Event], None]
FIRST_FRAME = 0.5
"""Seconds a replay waits, at most, for its start to be drawn before computing the rest."""


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


class ReplaySource:
    """A saved run played back at ``speed`` times its recorded pace.

    Made from a typed snapshot, or with :meth:`reading` from a snapshot's JSON
    as read (its start shown at once) and a function that checks it (run in a
    thread with the rest of the timeline; its error ends :meth:`run`).
    """

    kind = "replay"
    controls = frozenset({"pause", "seek", "speed"})
    report: Report | None
    """The replayed run's report, once the snapshot is checked."""
    log_dir: Path | None
    """Where the run's logs are, when they are still there."""

    def __init__(self, snapshot: Snapshot, speed: float = 1.0, log_dir: Path | None = None) -> None:
        head = {"id": snapshot.id, "plan": snapshot.plan, "report": to_plain(snapshot.report)}
        self._setup(lambda: snapshot, head, speed, log_dir)
        self.report = snapshot.report
        if self.log_dir is None:
            self.log_dir = _log_dir(snapshot.report)

    @classmethod
    def reading(
        cls,
        load: Callable[[], Snapshot],
        head: Mapping[str, Any],
        speed: float = 1.0,
        log_dir: Path | None = None,
    ) -> ReplaySource:
        """The replay of the snapshot whose JSON is ``head``, checked by ``load`` later."""
        source = cls.__new__(cls)
        source._setup(load, head, speed, log_dir)
        return source

    def _setup(
        self,
        load: Callable[[], Snapshot],
        head: Mapping[str, Any],
        speed: float,
        log_dir: Path | None,
    ) -> None:
        self._load = load
        identity = head.get("id")
        self.snapshot_id: str | None = identity if isinstance(identity, str) and identity else None
        """The replayed snapshot's id (``s`` names the report after it)."""
        start = started(head)
        self.timeline: list[tuple[float, Event]] = [(0.0, start)] if start is not None else []
        """The events to play: the start at once, the rest once :meth:`run` computed them."""
        self.end = math.inf
        """The run time of the last event (known once the timeline is computed)."""
        self.ready = False
        """The whole timeline is computed (seeks and playback then go anywhere in it)."""
        self.speed = speed
        self.position = 0.0
        self.paused = False
        self.report = None
        self.log_dir = log_dir if log_dir is not None and log_dir.is_dir() else None
        self._index = 0
        self._seeks = 0
        self._wake: asyncio.Event | None = None
        self._shown = asyncio.Event()

    def on_screen(self) -> None:
        """The start is drawn: the snapshot's check and the timeline may take the CPU now."""
        self._shown.set()

    async def run(self, emit: Emit) -> None:
        self._wake = asyncio.Event()
        for _, event in self.timeline:  # the start, when the JSON read gave it
            emit(event)
            self._index = 1
        if self.timeline:  # let the first frame be drawn before the thread takes the CPU
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._shown.wait(), FIRST_FRAME)
        snapshot, self.timeline = await asyncio.to_thread(_timeline, self._load)
        self.report = snapshot.report
        if self.log_dir is None:
            self.log_dir = _log_dir(snapshot.report)
        self.end = self.timeline[-1][0]
        self.position = min(self.position, self.end)
        self.ready = True
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
            started_at = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), (due - before) / speed)
            if self._seeks != seeks:
                continue
            if self._wake.is_set():
                self.position = min(due, before + (time.monotonic() - started_at) * speed)
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


def _timeline(load: Callable[[], Snapshot]) -> tuple[Snapshot, list[tuple[float, Event]]]:
    """The checked snapshot and its whole replay (:func:`~protobench.tui.timeline.
    replay_timeline`), in a thread."""
    # The snapshot's check and the engine's aggregation, judge and plan load here (numpy,
    # pydantic: 0.2-0.4 s of CPU), after the first frame rather than before it.
    from protobench.tui.timeline import replay_timeline  # noqa: PLC0415

    snapshot = load()
    return snapshot, replay_timeline(snapshot)


def _log_dir(report: Report) -> Path | None:
    for worker in report.workers:
        if worker.log and Path(worker.log).parent.is_dir():
            return Path(worker.log).parent
    return None
