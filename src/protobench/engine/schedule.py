"""Pacing inside a worker: the closed model, the open model and periodic groups.

* **Closed model** (:class:`ClosedDriver`): each session runs back-to-back, one
  exchange in flight. Callback sessions are re-submitted from their completion
  callback - no task, no future, no timer per request.
* **Open model and periodic groups** (:class:`ArrivalDriver`): arrivals are
  scheduled at intended times, ``1 / rate`` apart (the rate may ramp linearly
  and may be changed live). An arrival takes a free session; when none is free
  it waits in a backlog and is counted as ``late``. Latency is measured from
  the intended time (coordinated omission corrected) into ``latencies``, and
  from the actual send into ``uncorrected``. A periodic group (``every``) is the
  same mechanism with one session per driver and a rate of ``1 / every``.
  While a session is free the driver sleeps until each intended time on a
  :class:`~engine.waker.Timer` and issues the arrivals due from the timer's
  callback (no task, no future; a session's completion callback is bound once,
  not made per send). Arrivals closer together than the pacing
  precision (:data:`PACING_PRECISION_NS`) leave in batches: the timer is armed
  for the last arrival due within the precision after the next one, and that
  wake-up sends every arrival due by then. How late each arrival that found a
  free session was sent is recorded (``lateness``, reported as
  ``send_lateness_us``). While every session is busy
  the precise time does not matter (an arrival can only wait in the backlog),
  so the driver sleeps, and each completion takes up the arrivals due by then
  itself before it looks at the backlog, and re-arms the timer when it frees a
  session. An arrival sent to a session that was free more than 1 ms after
  its intended time plus the precision (the loop was too busy to get to it:
  the generator's lateness, not the target's or the batching's) is counted as
  ``behind``.

A request count (``-n``) is kept in :class:`RunState`: a counted run's drivers
take one per exchange they start (callback sessions through :class:`_Counted`,
so a run without a count pays nothing on its hot path), per arrival in the
open model (arrivals waiting for a session are still sent), and per failed
reopen in the closed model; once it is spent nothing more starts.

Sessions live in :class:`Slot` objects that reopen them after a connection
failure (a ``closed``, ``refused`` or ``connect`` error, or any error that
ended the connection: :attr:`OpError.lost`): immediately, then after 0.1 s,
doubling up to 2 s, so that a refused login does not hammer the server,
counting ``reconnects``. A slot
counts every successful open (``connects``, unless the plugin counts its own
connections: :attr:`ProtocolPlugin.counts_connects`), every failed one
(``connect_failed``) and the time it spends without a session while the run
wants one (``down_us``, accrued by :meth:`Slot.accrue_down` into the interval
it falls in).

The engine keeps the per-op timeout itself, whatever the plugin does: a slot
knows when its exchange in flight was sent, and :meth:`ExchangeDriver.sweep`
(every few hundred milliseconds and at every interval's end) counts one
``timeout`` for an exchange pending longer than the timeout (its later
completion is then not counted again), and abandons the session of an
exchange still pending :data:`ABANDON_AFTER` seconds later (the plugin lost
it: the session is closed and reopened). At the run's very end, an exchange
still pending that is younger than the timeout is counted as ``unfinished``.
An exception other than :class:`OpError` from a plugin (in ``open_session``,
``submit``, ``call`` or ``run``) is a ``local`` error whose code is the
exception's type; the session is reopened and the worker's log gets the
traceback once per type (:func:`unexpected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable

from protobench.engine.bounds import BEHIND_NS, READ_BOUND_NS
from protobench.engine.metrics import OpRecorder
from protobench.engine.rates import ramped_rate
from protobench.engine.waker import Timer
from protobench.protocols.base import (
    AsyncSession,
    CallbackSession,
    Done,
    ProtocolPlugin,
    Session,
    SessionContext,
    StreamSession,
)
from protobench.protocols.timestamps.clock import Stamps
from protobench.protocols.timestamps.reactor import Reactor
from protobench.redaction import redact_text
from protobench.vocab.counters import BEHIND, CONNECTS, DOWN_US
from protobench.vocab.errors import ErrorClass, OpError

RECONNECT_CLASSES = frozenset({ErrorClass.CLOSED, ErrorClass.REFUSED, ErrorClass.CONNECT})
REOPEN_DELAY = 0.1
REOPEN_MAX_DELAY = 2.0
MAX_BACKLOG = 1_000_000
BUSY_WAIT_NS = 10_000_000
"""How long the open-model driver sleeps at most while every session is busy (completions
take up due arrivals themselves and re-arm its timer when they free a session)."""
PACING_PRECISION_NS = 100_000
"""The open model's pacing precision: arrivals closer together than this leave in batches,
each up to this much after its intended time, so that the driver need not wake for each."""

ABANDON_AFTER = 1.0
"""Seconds past the timeout after which the engine gives up on an exchange the plugin never ends."""
CONNECT_FAILED = "connect_failed"
RECONNECTS = "reconnects"
UNFINISHED = "unfinished"

perf_ns = time.perf_counter_ns

_reported: set[type[BaseException]] = set()


def unexpected(exc: Exception, where: str) -> OpError:
    """A plugin's exception that is not an :class:`OpError`, as a ``local`` error.

    The error's code is the exception's type; the first exception of each type
    has its traceback written to stderr (the worker's log).
    """
    kind = type(exc)
    if kind not in _reported:
        _reported.add(kind)
        text = "".join(traceback.format_exception(exc))
        print(f"unexpected {kind.__name__} in {where}:\n{redact_text(text)}", file=sys.stderr)
    return OpError(ErrorClass.LOCAL, redact_text(f"{where}: {exc}"), code=kind.__name__)


class RunState:
    """Shared flags of one worker: running, paused, the live rate factor, the request count.

    ``counted``: the run has a request count (from the start, its warmup too).
    ``left`` is how many exchanges may still start (-1: no limit yet): every
    driver of a counted run takes one (:meth:`take`) as it starts an exchange
    (a callback session through :class:`_Counted`) or, in the open model, as an
    arrival comes; at 0 the count is spent (:meth:`spend`): no exchange starts
    any more, pause and resume notwithstanding, while the run goes on (the
    exchanges in flight end, an open model's backlog is served) until it stops.
    A run without a count takes nothing: its hot path is as it was.
    """

    def __init__(self) -> None:
        self.running = True
        self.paused = False
        self.active = True
        """Running, not paused, the count not spent: a plain attribute for the hot path."""
        self.counted = False
        self.left = -1
        self.spent = asyncio.Event()
        """Set when the request count is spent."""
        self.rate_factor = 1.0
        self.paused_ns = 0
        """Time spent paused so far (the open model's schedule skips it)."""
        self.last_pause_ns = 0
        """How long the pause that the last :meth:`resume` ended lasted (0 if none)."""
        self._paused_at = 0
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._listeners: list[Callable[[], None]] = []

    def on_resume(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def begin(self, now_ns: int) -> None:
        """The run starts at ``now_ns``: a pause that came before counts from here."""
        self.paused_ns = self.last_pause_ns = 0
        if self.paused:
            self._paused_at = now_ns

    def pause(self) -> None:
        if not self.paused:
            self._paused_at = perf_ns()
        self.paused = True
        self.active = False
        self._resumed.clear()

    def resume(self) -> None:
        self.last_pause_ns = perf_ns() - self._paused_at if self.paused else 0
        self.paused_ns += self.last_pause_ns
        self.paused = False
        self.active = self.running and self.left != 0
        self._resumed.set()
        for callback in self._listeners:
            callback()

    def stop(self) -> None:
        self.running = False
        self.resume()
        self.active = False

    async def wait_resumed(self) -> None:
        await self._resumed.wait()

    @property
    def serving(self) -> bool:
        """An arrival already due may still be sent: running, not paused (a spent count
        stops new arrivals, not those waiting)."""
        return self.running and not self.paused

    def allow(self, count: int) -> None:
        """From now on at most ``count`` more exchanges start (none when it is 0 or less)."""
        self.left = count
        if count <= 0:
            self.spend()

    def take(self) -> None:
        """An exchange starts (or an arrival comes): one less of the count; the last spends it."""
        self.left -= 1
        if not self.left:
            self.spend()

    def spend(self) -> None:
        """The request count is reached: no exchange starts from now on."""
        self.left = 0
        self.active = False
        self.spent.set()


class Slot:
    """One session of a group, reopened after connection failures.

    ``pending_since`` is when the exchange in flight on this session was sent
    (``perf_counter_ns``; 0 when none is) and ``expired`` says the engine has
    already counted it as a timeout. ``down_since`` is when the slot lost (or
    failed to open) its session and the down time since was last accrued (0
    while it has one).
    """

    __slots__ = (
        "_reopening",
        "counts_connects",
        "ctx",
        "down_since",
        "expired",
        "on_failed",
        "on_open",
        "paced",
        "pending_since",
        "plugin",
        "recorder",
        "session",
        "task",
    )

    def __init__(self, plugin: ProtocolPlugin, ctx: SessionContext, recorder: OpRecorder) -> None:
        self.plugin = plugin
        self.ctx = ctx
        self.recorder = recorder
        self.session: Session | None = None
        self._reopening: asyncio.Task[None] | None = None
        self.on_open: Callable[[Slot], None] | None = None
        self.on_failed: Callable[[], None] | None = None
        """Told of each failed reopen (the closed model counts it against a request count)."""
        self.counts_connects = bool(getattr(plugin, "counts_connects", False))
        self.pending_since = 0
        self.expired = False
        self.task: asyncio.Task[None] | None = None
        """The task of an awaitable exchange in flight (cancelled if it is abandoned)."""
        self.down_since = 0
        self.paced: _Paced | None = None
        """The open model's completion callback for the current session."""

    async def open(self) -> bool:
        """Open the session once; count a failure on the recorder."""
        try:
            session = await asyncio.wait_for(
                self.plugin.open_session(self.ctx), timeout=self.ctx.timeout
            )
        except OpError as exc:
            return self._open_failed(exc)
        except TimeoutError:
            return self._open_failed(OpError(ErrorClass.TIMEOUT, "session open timed out"))
        except Exception as exc:
            return self._open_failed(unexpected(exc, "open_session"))
        self.session = session
        if not self.counts_connects:
            self.recorder.count(CONNECTS)
        if self.down_since:
            self.accrue_down(perf_ns())
            self.down_since = 0
        return True

    def _open_failed(self, exc: OpError) -> bool:
        self.recorder.error(exc)
        self.recorder.count(CONNECT_FAILED)
        if not self.down_since:
            self.down_since = perf_ns()
        return False

    def accrue_down(self, now: int) -> None:
        """Add the down time since the last accrual to the recorder (call while down)."""
        if self.down_since and now > self.down_since:
            self.recorder.count(DOWN_US, (now - self.down_since) // 1000)
            self.down_since = now

    def lost(self, state: RunState) -> None:
        """The session's connection failed: close it and reopen in the background."""
        self.drop()
        self.recorder.count(RECONNECTS)
        self.reopen(state, first_delay=0.0)

    def drop(self) -> None:
        """Forget the session (closed in the background); the slot is down from now."""
        session, self.session = self.session, None
        self.pending_since = 0
        self.expired = False
        if session is not None:
            asyncio.get_running_loop().create_task(_close_quietly(session))
        if not self.down_since:
            self.down_since = perf_ns()

    def reopen(self, state: RunState, first_delay: float = REOPEN_DELAY) -> None:
        if self._reopening is None or self._reopening.done():
            self._reopening = asyncio.get_running_loop().create_task(
                self._reopen_loop(state, first_delay)
            )

    async def _reopen_loop(self, state: RunState, delay: float) -> None:
        while state.running:
            if delay:
                await asyncio.sleep(delay)
            if not state.running:
                return
            if await self.open():
                if self.on_open is not None:
                    self.on_open(self)
                return
            if self.on_failed is not None:
                self.on_failed()
            delay = min(REOPEN_MAX_DELAY, max(REOPEN_DELAY, delay * 2))

    async def close(self) -> None:
        if self._reopening is not None:
            self._reopening.cancel()
        session, self.session = self.session, None
        if session is not None:
            await _close_quietly(session)


async def _close_quietly(session: Session) -> None:
    with contextlib.suppress(Exception):
        await session.close()


class ExchangeDriver:
    """What the closed and the open model's drivers share: exchanges in flight on slots."""

    reactor: Reactor | None = None
    """The stamped sockets the open model reads lazily (:class:`ArrivalDriver`)."""

    def __init__(self, slots: list[Slot], recorder: OpRecorder, state: RunState) -> None:
        self.slots = slots
        self.recorder = recorder
        self.state = state
        self.inflight = 0

    @property
    def pending(self) -> int:
        """Exchanges not ended yet: in flight (and, in the open model, waiting for a session)."""
        return self.inflight

    def read_arrived(self) -> None:
        """Take up the replies waiting unread, before timeouts are counted or an interval ends."""
        reactor = self.reactor
        if reactor is not None and reactor.lazy:
            reactor.poll()

    def sweep(self, now: int, timeout: float, final: bool = False) -> None:
        """Count exchanges pending longer than ``timeout`` seconds as timeouts (once each).

        Abandon those pending :data:`ABANDON_AFTER` seconds longer still. With
        ``final`` (the run's end) nothing is abandoned and an exchange younger
        than the timeout is counted as ``unfinished``.
        """
        expire_before = now - int(timeout * 1e9)
        abandon_before = expire_before - int(ABANDON_AFTER * 1e9)
        for slot in self.slots:
            since = slot.pending_since
            if not since:
                continue
            if since <= expire_before:
                if not slot.expired:
                    slot.expired = True
                    self.recorder.error(
                        OpError(ErrorClass.TIMEOUT, f"no reply within {timeout:g}s")
                    )
                if since <= abandon_before and not final:
                    self.abandon(slot)
            elif final and not slot.expired:
                self.recorder.count(UNFINISHED)

    def abandon(self, slot: Slot) -> None:
        """Give up on the exchange in flight on ``slot``: its session is reopened."""
        self.inflight -= 1
        task, slot.task = slot.task, None
        if task is not None:
            task.cancel()
        slot.lost(self.state)

    def _unexpected(self, slot: Slot, exc: Exception, where: str) -> None:
        """A plugin's exchange raised something other than :class:`OpError`: reopen."""
        self.recorder.error(unexpected(exc, where))
        slot.lost(self.state)


class ClosedDriver(ExchangeDriver):
    """Back-to-back exchanges on every slot of a group (closed model)."""

    def __init__(self, slots: list[Slot], recorder: OpRecorder, state: RunState) -> None:
        super().__init__(slots, recorder, state)
        self._idle: list[Slot] = []
        self._tasks: set[asyncio.Task[None]] = set()
        state.on_resume(self._wake)

    def start(self) -> None:
        for slot in self.slots:
            slot.on_open = self._begin
            slot.on_failed = self._open_failed
            if slot.session is None:
                slot.reopen(self.state)
            else:
                self._begin(slot)

    def _wake(self) -> None:
        idle, self._idle = self._idle, []
        for slot in idle:
            self._begin(slot)

    def _begin(self, slot: Slot) -> None:
        session = slot.session
        state = self.state
        if session is None or not state.running:
            return
        if not state.active:  # paused, or the request count is spent
            self._idle.append(slot)
        elif isinstance(session, CallbackSession):
            _CallbackLoop(self, slot, session).next(perf_ns())
        elif isinstance(session, AsyncSession):
            task = asyncio.get_running_loop().create_task(self._async_loop(slot, session))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            raise TypeError(f"{type(session).__name__} cannot run back-to-back")

    def _open_failed(self) -> None:
        """A session failed to reopen: an exchange of a request count, so that a target that
        stays down ends a counted run (as oha and hey count a refused connection)."""
        if self.state.counted and self.state.active:
            self.state.take()

    def failed(self, slot: Slot, exc: OpError, counted: bool = True) -> bool:
        """Record a failure (unless counted already); True if the loop on this slot must end."""
        if counted:
            self.recorder.error(exc)
        if exc.lost or exc.error_class in RECONNECT_CLASSES:
            slot.lost(self.state)
            return True
        return False

    async def _async_loop(self, slot: Slot, session: AsyncSession) -> None:
        recorder = self.recorder
        append = recorder.latencies.append
        stamps = slot.ctx.stamps
        slot.task = asyncio.current_task()
        try:
            while self.state.running:
                if not self.state.active:
                    self._idle.append(slot)
                    return
                if self.state.counted:
                    self.state.take()
                self.inflight += 1
                start = slot.pending_since = perf_ns()
                stamps.sent = 0
                try:
                    nbytes = await session.call()
                except OpError as exc:
                    self.inflight -= 1
                    if self.failed(slot, exc, counted=_settle(slot)):
                        return
                    continue
                except Exception as exc:
                    self.inflight -= 1
                    _settle(slot)
                    self._unexpected(slot, exc, "call")
                    return
                self.inflight -= 1
                if _settle(slot):
                    sent, ended, delay = exchange_times(stamps, start, perf_ns())
                    append(ended - sent)
                    if delay >= 0:
                        recorder.delays.append(delay)
                    recorder.bytes_in += nbytes
        finally:
            if slot.task is asyncio.current_task():
                slot.task = None


def exchange_times(stamps: Stamps, fallback: int, now: int) -> tuple[int, int, int]:
    """``(sent, ended, delay)`` of an exchange that just completed, on the engine's clock.

    ``sent`` is the session's send stamp, else ``fallback`` (the engine's time
    before ``submit``); ``ended`` the kernel's receive stamp of the reply when
    the session has one for it (not older than the send), else ``now`` (the
    engine's time of the completion); ``delay`` the generator's own time from
    the stamp to now (-1: not measured). :class:`_CallbackLoop` inlines it.
    """
    sent = stamps.sent or fallback
    received = stamps.received
    if received >= sent:
        return sent, received, now - received
    return sent, now, -1


def _settle(slot: Slot) -> bool:
    """The exchange in flight on ``slot`` ended: True if its outcome is still to be counted."""
    slot.pending_since = 0
    if slot.expired:
        slot.expired = False
        return False
    return True


class _CallbackLoop:
    """The completion callback chain of one callback session.

    A success while the run is active starts the next exchange at once, from
    inside the completion (the slot stays counted in ``driver.inflight``). A
    completion of an exchange the engine abandoned (the slot's ``pending_since``
    is no longer this exchange's start) is ignored. The latency runs from the
    session's send stamp (``stamps.sent``, taken immediately before the send
    syscall, or the kernel's) to the reply's receive stamp (or the engine's time
    of the completion); a session that stamps nothing is timed from just before
    ``submit``.
    """

    __slots__ = (
        "append",
        "callback",
        "delays",
        "driver",
        "recorder",
        "session",
        "slot",
        "stamps",
        "start",
        "state",
    )

    def __init__(self, driver: ClosedDriver, slot: Slot, session: CallbackSession) -> None:
        self.driver = driver
        self.state = driver.state
        self.slot = slot
        self.session = _Counted(session, driver.state) if driver.state.counted else session
        self.recorder = driver.recorder
        self.append = driver.recorder.latencies.append
        self.delays = driver.recorder.delays.append
        self.stamps = slot.ctx.stamps
        self.callback = self.done
        self.start = 0

    def next(self, now: int) -> None:
        """Start an exchange (the first, or the next after a failure) unless the load stopped."""
        if not self.state.active:
            if self.state.running:
                self.driver._idle.append(self.slot)
            return
        self.driver.inflight += 1
        self.start = self.slot.pending_since = now
        self.stamps.sent = 0
        try:
            self.session.submit(self.callback)
        except Exception as exc:
            self._submit_failed(now, exc)

    def _submit_failed(self, start: int, exc: Exception) -> None:
        if self.slot.pending_since == start:
            self.driver.inflight -= 1
            _settle(self.slot)
            self.driver._unexpected(self.slot, exc, "submit")

    def done(self, error: OpError | None, nbytes: int) -> None:
        now = perf_ns()
        slot = self.slot
        if slot.pending_since != self.start:
            return
        if slot.expired:
            slot.expired = counted = False
        else:
            counted = True
        stamps = self.stamps
        if error is None:
            if counted:  # exchange_times, inlined: this is the closed model's hot path
                sent = stamps.sent or self.start
                received = stamps.received
                if received >= sent:
                    self.append(received - sent)
                    self.delays(now - received)
                else:
                    self.append(now - sent)
                self.recorder.bytes_in += nbytes
            if self.state.active:
                self.start = slot.pending_since = now
                stamps.sent = 0
                try:
                    self.session.submit(self.callback)
                except Exception as exc:
                    self._submit_failed(now, exc)
                return
        slot.pending_since = 0
        driver = self.driver
        driver.inflight -= 1
        if error is not None:
            if driver.failed(slot, error, counted):
                return
            if self.state.active:
                asyncio.get_running_loop().call_soon(self.next, now)
                return
        if self.state.running:
            driver._idle.append(slot)


class _Counted(CallbackSession):
    """A callback session of a counted run: each exchange it starts takes one of the count
    (a frame more per exchange, for counted runs only)."""

    __slots__ = ("inner", "state")

    def __init__(self, inner: CallbackSession, state: RunState) -> None:
        self.inner = inner
        self.state = state

    def submit(self, done: Done) -> None:
        state = self.state
        state.left -= 1  # state.take(), inlined
        if not state.left:
            state.spend()
        self.inner.submit(done)

    async def close(self) -> None:
        await self.inner.close()


class ArrivalDriver(ExchangeDriver):
    """Exchanges at intended times over a pool of slots (open model, periodic groups)."""

    def __init__(
        self,
        slots: list[Slot],
        recorder: OpRecorder,
        state: RunState,
        rate: float,
        ramp_to: float | None,
        ramp_seconds: float,
        phase_offset: float = 0.0,
        precision_ns: int = PACING_PRECISION_NS,
        reactor: Reactor | None = None,
    ) -> None:
        super().__init__(slots, recorder, state)
        self.reactor = reactor
        if reactor is not None:
            reactor.batch_sends = False  # each arrival's send time is its lateness's end
        self.rate = rate
        self.ramp_to = ramp_to if ramp_to is not None else rate
        self.ramp_seconds = max(ramp_seconds, 1e-9)
        self.phase_offset = phase_offset
        self.precision_ns = precision_ns
        self._free: deque[Slot] = deque()
        self._backlog: deque[int] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._start_ns = 0
        self._next = 0
        """The next arrival's intended time on the run's clock less the time spent paused."""
        self._timer: Timer | None = None
        self._steady_gap = 0
        self._steady_factor = -1.0
        """The gap after the ramp, and the rate factor it was computed for (-1: none yet)."""
        self._stopped: asyncio.Future[None] | None = None

    def current_rate(self, elapsed: float) -> float:
        ramped = ramped_rate(self.rate, self.ramp_to, self.ramp_seconds, elapsed)
        return ramped * self.state.rate_factor

    @property
    def pending(self) -> int:
        return self.inflight + len(self._backlog)

    @property
    def due(self) -> int:
        """The intended time (``perf_counter_ns``) of the next arrival."""
        return self._next + self.state.paused_ns

    async def run(self, start_ns: int) -> None:
        """Issue arrivals until the run stops (pauses skip the paused time)."""
        for slot in self.slots:
            slot.on_open = self._opened
            if slot.session is None:
                slot.reopen(self.state)
            else:
                self._free.append(slot)
        self._start_ns = start_ns
        self._next = start_ns + int(self.phase_offset / self.current_rate(0.0) * 1e9)
        self.state.on_resume(self._resumed)
        self._stopped = asyncio.get_running_loop().create_future()
        self._timer = timer = Timer(self._tick)
        try:
            self._tick()
            if self.state.running:
                await self._stopped
        finally:
            self._timer = None
            timer.close()

    def _tick(self) -> None:
        """The timer's callback: read the replies waiting (lazy reads), take up the arrivals
        due by now, then sleep until the next."""
        reactor = self.reactor
        if self.state.active:
            if reactor is not None and reactor.lazy:
                reactor.poll()
            now = perf_ns()
            self._catch_up(now)
            self._schedule(now)
        elif reactor is not None:
            reactor.set_lazy(False)

    def _schedule(self, now: int) -> None:
        """Arm the timer for the next arrival, unless every session is busy.

        While every session is busy an arrival can only wait in the backlog, so
        the driver sleeps (waking every :data:`BUSY_WAIT_NS` to count the arrivals
        due, should no completion come); completions take up due arrivals
        themselves, and the one that frees a session re-arms the timer.
        Arrivals closer together than the precision are waited for in batches:
        the timer is armed at the intended time of the last arrival due within
        the precision after the next one, and every arrival due by then leaves
        on that wake-up (the first of a batch at most the precision late, the
        last on time; the lateness is recorded in ``lateness``).
        """
        timer = self._timer
        if timer is None:
            return
        due = self.due
        reactor = self.reactor
        if not self._free:
            if reactor is not None:
                reactor.set_lazy(False)
            timer.arm(max(due, now + BUSY_WAIT_NS))
            return
        gap = self._gap()
        if reactor is not None:
            reactor.set_lazy(max(gap, self.precision_ns) <= READ_BOUND_NS)
        timer.arm(due + self.precision_ns // gap * gap)

    def _catch_up(self, now: int) -> None:
        """Take up every arrival due by ``now``, in order.

        The schedule moves on before an arrival is issued, so a session that
        completes inside ``submit`` (and catches up itself) cannot take it twice.
        """
        state = self.state
        counted = state.counted
        while state.active and (intended := self.due) <= now:
            self._next += self._gap()
            if counted:
                state.take()
            self._arrive(intended, now)

    def _gap(self) -> int:
        """Nanoseconds from the next arrival to the one after it.

        Once the ramp is over the gap only changes with the live rate factor, so
        it is kept until the factor changes.
        """
        factor = self.state.rate_factor
        if factor == self._steady_factor:
            return self._steady_gap
        elapsed = (self._next - self._start_ns) / 1e9
        gap = max(1, int(1e9 / self.current_rate(elapsed)))
        if elapsed >= self.ramp_seconds or self.ramp_to == self.rate:
            self._steady_gap, self._steady_factor = gap, factor
        return gap

    def _arrive(self, intended: int, now: int) -> None:
        while self._free:
            slot = self._free.popleft()
            if slot.session is not None:
                if now - intended > BEHIND_NS + self.precision_ns:
                    self.recorder.count(BEHIND)
                self.recorder.lateness.append(self._issue(slot, intended) - intended)
                return
        if len(self._backlog) >= MAX_BACKLOG:
            self.recorder.error(OpError(ErrorClass.LOCAL, "backlog full: no free session"))
            return
        self.recorder.late += 1
        self._backlog.append(intended)

    def _resumed(self) -> None:
        """After a pause: waiting arrivals move on by the paused time and take the free sessions.

        When the run stops (which resumes it), :meth:`run` returns.
        """
        if not self.state.running:
            if self.reactor is not None:
                self.reactor.set_lazy(False)
            if self._stopped is not None and not self._stopped.done():
                self._stopped.set_result(None)
            return
        shift = self.state.last_pause_ns
        if shift and self._backlog:
            self._backlog = deque(intended + shift for intended in self._backlog)
        while self._backlog and self._free and self.state.serving:
            slot = self._free.popleft()
            if slot.session is not None:
                self._issue(slot, self._backlog.popleft())
        self._tick()

    def _opened(self, slot: Slot) -> None:
        self._release(slot, perf_ns())

    def _release(self, slot: Slot, now: int) -> None:
        """A session is free: it takes the oldest waiting arrival, or waits for the next one."""
        self._catch_up(now)
        if self._backlog and self.state.serving and slot.session is not None:
            self._issue(slot, self._backlog.popleft())
            return
        self._free.append(slot)
        timer = self._timer
        if timer is not None and len(self._free) == 1 and self.state.active:
            self._schedule(now)  # the driver slept with every session busy

    def _issue(self, slot: Slot, intended: int) -> int:
        """Send the arrival due at ``intended`` on ``slot``; return when it was sent (the
        session's send stamp, else the time just before ``submit``)."""
        session = slot.session
        paced = slot.paced
        if paced is None or paced.session is not session:
            paced = slot.paced = _Paced(self, slot, session)
        stamps = slot.ctx.stamps
        self.inflight += 1
        sent = slot.pending_since = perf_ns()
        stamps.sent = 0
        if paced.callback is not None:
            paced.intended = intended
            try:
                session.submit(paced.callback)  # type: ignore[union-attr]
            except Exception as exc:
                if slot.pending_since == sent:
                    self.inflight -= 1
                    _settle(slot)
                    self._unexpected(slot, exc, "submit")
        elif isinstance(session, AsyncSession):
            task = asyncio.get_running_loop().create_task(self._call(slot, session, intended, sent))
            slot.task = task
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            raise TypeError(f"{type(session).__name__} cannot be paced")
        return stamps.sent or sent

    async def _call(self, slot: Slot, session: AsyncSession, intended: int, sent: int) -> None:
        try:
            nbytes = await session.call()
        except OpError as exc:
            self._done(slot, intended, sent, exc, 0)
            return
        except Exception as exc:
            if slot.pending_since == sent:
                slot.task = None
                self.inflight -= 1
                _settle(slot)
                self._unexpected(slot, exc, "call")
            return
        self._done(slot, intended, sent, None, nbytes)

    def _done(
        self, slot: Slot, intended: int, sent: int, error: OpError | None, nbytes: int
    ) -> None:
        if slot.pending_since != sent:
            return  # abandoned by the engine: already counted
        now = perf_ns()
        slot.task = None
        self.inflight -= 1
        counted = _settle(slot)
        recorder = self.recorder
        if error is None:
            if counted:
                start, ended, delay = exchange_times(slot.ctx.stamps, sent, now)
                recorder.latencies.append(ended - intended)
                recorder.uncorrected.append(ended - start)
                if delay >= 0:
                    recorder.delays.append(delay)
                recorder.bytes_in += nbytes
        else:
            if counted:
                recorder.error(error)
            if error.lost or error.error_class in RECONNECT_CLASSES:
                slot.lost(self.state)
                return
        self._release(slot, now)


class _Paced:
    """The open model's completion callback for one session of a slot (no closure per send).

    ``callback`` (``None`` for a session that is not a :class:`CallbackSession`) is
    bound once; the arrival in flight's intended time is kept here and its send
    time in the slot's ``pending_since``, which a completion of an exchange the
    engine abandoned no longer matches.
    """

    __slots__ = ("callback", "driver", "intended", "session", "slot")

    def __init__(self, driver: ArrivalDriver, slot: Slot, session: Session | None) -> None:
        self.driver = driver
        self.slot = slot
        self.session = session
        self.intended = 0
        self.callback = self.done if isinstance(session, CallbackSession) else None

    def done(self, error: OpError | None, nbytes: int) -> None:
        slot = self.slot
        sent = slot.pending_since
        if sent and slot.session is self.session:  # else abandoned: already counted
            self.driver._done(slot, self.intended, sent, error, nbytes)


class StreamDriver:
    """Runs every stream session of a group until the run stops."""

    def __init__(self, slots: list[Slot], recorder: OpRecorder, state: RunState) -> None:
        self.slots = slots
        self.recorder = recorder
        self.state = state
        self.inflight = 0

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            for slot in self.slots:
                group.create_task(self._keep(slot))

    async def _keep(self, slot: Slot) -> None:
        delay = REOPEN_DELAY
        while self.state.running:
            session = slot.session
            if session is None:
                await asyncio.sleep(delay)
                if not self.state.running:
                    return
                if not await slot.open():
                    delay = min(REOPEN_MAX_DELAY, delay * 2)
                    continue
                delay = REOPEN_DELAY
                session = slot.session
            assert isinstance(session, StreamSession)
            try:
                await session.run(self.recorder)
            except OpError as exc:
                self.recorder.error(exc)
            except Exception as exc:
                self.recorder.error(unexpected(exc, "run"))
            else:
                return
            slot.drop()
            self.recorder.count(RECONNECTS)
