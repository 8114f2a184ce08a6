"""The sinks of a run's events: each with its own bounded buffer, consumed by its own task.

Every consumer of a run (the progress line, the ``--ndjson`` stream, the
monitor, a test) is a :class:`Sink` attached to the controller. The
controller publishes each event to every sink's :class:`Subscription` without
ever waiting; each sink reads its subscription in a task of its own
(``async for event in events``), so a slow sink (a blocked stdout pipe) only
falls behind, it never stalls the engine.

When a sink's buffer is full: ``interval`` and ``resources`` events
(:data:`LOSSY`) are bounded to ``limit`` queued ones per sink; past it the
oldest queued one is dropped (the newest figures win) and counted in
:attr:`Subscription.lost`. Every other event (started, phase, notice, the
final ``RunFinished``) is always queued: a run has few. The sink is never
left unaware: just before ``RunFinished`` its subscription hands it one
:class:`~protobench.engine.events.Notice` of kind ``<sink name>`` saying how
many events were left out. The final report always arrives, last.

:class:`Fanout` runs the sinks: :meth:`Fanout.running` starts their tasks,
and on leaving it closes the subscriptions and waits until every sink has
read its last event; :meth:`Fanout.abandon` stops waiting for sinks that are
stuck once the run is over (a repeated Ctrl-C). A sink that raises is detached and reported
through ``on_error``; the others go on.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Protocol

import anyio

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    ProfileUpdate,
    ResourceSample,
    RunFinished,
)

LOSSY: tuple[type, ...] = (IntervalUpdate, ResourceSample, ProfileUpdate)
"""The events a sink that falls behind may lose (the newest win)."""
LOSSY_LIMIT = 64
"""Queued interval and resource events kept per sink (a minute of 1 s intervals)."""


class LossyQueue:
    """A queue of events that keeps at most ``limit`` queued :data:`LOSSY` ones: past it the
    oldest of them is dropped (counted in :attr:`lost`); every other event is always kept.

    Not thread-safe: a :class:`Subscription` uses it on one loop, the monitor's
    handover from two threads under its own lock.
    """

    def __init__(self, limit: int = LOSSY_LIMIT) -> None:
        self.limit = limit
        self.lost = 0
        """Lossy events dropped because the reader did not keep up."""
        self.last_lost_at = 0.0
        """The run time (``elapsed``) of the last event dropped."""
        self._queue: deque[Event] = deque()
        self._lossy = 0

    def __len__(self) -> int:
        return len(self._queue)

    def put(self, event: Event) -> None:
        """Queue ``event``, dropping the oldest queued lossy event when full."""
        if isinstance(event, LOSSY):
            if self._lossy >= self.limit:
                self._drop_oldest_lossy()
            self._lossy += 1
        self._queue.append(event)

    def first(self) -> Event:
        """The event :meth:`get` returns next (the queue is not empty)."""
        return self._queue[0]

    def get(self) -> Event:
        """The oldest queued event, removed (the queue is not empty)."""
        event = self._queue.popleft()
        if isinstance(event, LOSSY):
            self._lossy -= 1
        return event

    def take_all(self) -> list[Event]:
        """Every queued event, oldest first, removed."""
        events = list(self._queue)
        self._queue.clear()
        self._lossy = 0
        return events

    def pending(self) -> tuple[Event, ...]:
        """The queued events, oldest first, left in the queue."""
        return tuple(self._queue)

    def _drop_oldest_lossy(self) -> None:
        for i, queued in enumerate(self._queue):
            if isinstance(queued, IntervalUpdate | ResourceSample | ProfileUpdate):
                del self._queue[i]
                self._lossy -= 1
                self.lost += 1
                self.last_lost_at = queued.elapsed
                return


class Subscription:
    """One sink's bounded buffer of events: :meth:`offer` never waits; iterate to read."""

    def __init__(self, name: str, limit: int = LOSSY_LIMIT) -> None:
        self.name = name
        self._queue = LossyQueue(limit)
        self._told = False
        self._closed = False
        self._wake = anyio.Event()

    @property
    def lost(self) -> int:
        """Interval and resource events dropped because the sink did not keep up."""
        return self._queue.lost

    def offer(self, event: Event) -> None:
        """Queue ``event`` (dropping the oldest queued lossy event when full); never waits."""
        if self._closed:
            return
        self._queue.put(event)
        self._wake.set()

    def close(self) -> None:
        """No more events: the iteration ends once the queue is read."""
        self._closed = True
        self._wake.set()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            self._wake = anyio.Event()
            await self._wake.wait()
        if self.lost and not self._told and isinstance(self._queue.first(), RunFinished):
            self._told = True
            return self.lost_notice()
        return self._queue.get()

    def lost_notice(self) -> Notice:
        """What this sink left out, as a notice of kind ``<sink name>``."""
        return Notice(
            self.name,
            f"{self.lost} interval and resource events were left out: the consumer did not keep up",
            self._queue.last_lost_at,
            {"lost": self.lost},
        )


class Sink(Protocol):
    """A consumer of a run's events, reading its own subscription until it ends."""

    name: str
    """Names the sink in its notices (``ndjson``, ``progress``, ``monitor``, ``snapshot``)."""

    async def consume(self, events: Subscription) -> None: ...


class Each:
    """A sink that calls a plain function with each event, in the sink's own task; with
    ``blocking`` (it writes to a pipe that may fill up) in a worker thread."""

    def __init__(
        self, name: str, callback: Callable[[Event], None], *, blocking: bool = False
    ) -> None:
        self.name = name
        self.callback = callback
        self.blocking = blocking

    async def consume(self, events: Subscription) -> None:
        async for event in events:
            if self.blocking:
                await anyio.to_thread.run_sync(self.callback, event, abandon_on_cancel=True)
            else:
                self.callback(event)


class Fanout:
    """The subscriptions of a run's sinks, and the tasks that drive them."""

    def __init__(self, on_error: Callable[[str, Exception], None]) -> None:
        self.on_error = on_error
        self._sinks: list[tuple[Sink, Subscription]] = []
        self._scopes: list[anyio.CancelScope] = []
        self._running = False
        self._draining = False

    def attach(self, sink: Sink, limit: int = LOSSY_LIMIT) -> Subscription:
        """Subscribe ``sink``; it sees every event published from now on."""
        if self._running:
            raise RuntimeError("attach sinks before the run starts")
        subscription = Subscription(sink.name, limit)
        self._sinks.append((sink, subscription))
        return subscription

    def publish(self, event: Event) -> None:
        for _, subscription in self._sinks:
            subscription.offer(event)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Drive every sink while the body runs; then close and wait for them to finish."""
        self._running = True
        async with anyio.create_task_group() as group:
            for sink, subscription in self._sinks:
                group.start_soon(self._drive, sink, subscription)
            try:
                yield
            finally:
                self._draining = True
                for _, subscription in self._sinks:
                    subscription.close()

    def abandon(self) -> None:
        """Stop waiting for sinks still reading once the run is over (a repeated Ctrl-C)."""
        if self._draining:
            for scope in self._scopes:
                scope.cancel()

    async def _drive(self, sink: Sink, subscription: Subscription) -> None:
        with anyio.CancelScope() as scope:
            self._scopes.append(scope)
            try:
                await sink.consume(subscription)
            except Exception as exc:  # a sink's bug loses that sink, never the run
                self.on_error(sink.name, exc)
            finally:
                subscription.close()
