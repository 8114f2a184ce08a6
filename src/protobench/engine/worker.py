"""Entry point of one worker process: ``python -m protobench.engine.worker LOGFILE``.

The worker keeps its real stdout for frames to the controller and points file
descriptors 1 and 2 at ``LOGFILE``, so nothing it or a library prints reaches
the terminal. It reads frames from stdin: ``PLAN`` (its :class:`WorkerSlice`),
then ``GO`` (the monotonic start time), then control frames (``PAUSE``,
``RESUME``, ``RATE``, ``STOP``); a control frame that comes before ``GO`` is
kept and applied when the run starts. It opens its sessions, answers ``HELLO``,
waits for the start, runs the warmup and sustain phases on uvloop, sends one
``STATS`` frame per interval (intervals never straddle a phase boundary), lets
in-flight exchanges finish during ``drain`` (sessions are told with
``stopping``) and stream sessions receive for a short grace and then until
they are ``settled`` (deliveries still on their way; all of it forms the
``drain`` phase, bounded by its length), then sends ``BYE``. From the plan on,
it sends a ``BEAT`` frame every interval, so the controller can tell a hung
worker from a quiet one. With a request count, it sends ``DONE`` once its
share has been started and has ended, and stays in sustain, idle, until the
controller's ``STOP`` (every worker done); its last interval ends when its
last exchange did. A fatal error is sent as ``ERROR`` with its message.

Every interval's end (and every :data:`SWEEP` seconds) counts the exchanges
pending longer than the timeout (:meth:`ExchangeDriver.sweep`) and the time
sessions spent down (``down_us``) into the interval; the drain's report counts
what is still pending then (``timeout`` or ``unfinished``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
import traceback
from typing import Any

import uvloop

from protobench.engine.frames import CONTROL, FrameDecoder, FrameKind, encode_frame
from protobench.engine.metrics import OpRecorder
from protobench.engine.plan import GroupPlan, GroupSlice, WorkerSlice
from protobench.engine.schedule import (
    ArrivalDriver,
    ClosedDriver,
    ExchangeDriver,
    RunState,
    Slot,
    StreamDriver,
    perf_ns,
)
from protobench.engine.waker import tighten_timer_slack
from protobench.hostutil import raise_fd_limit
from protobench.lifeline import die_with_parent
from protobench.protocols import registry
from protobench.protocols.base import Session, SessionContext, StreamSession
from protobench.protocols.timestamps.clock import KERNEL, WALL, probe
from protobench.protocols.timestamps.reactor import Reactor

OPEN_CONCURRENCY = 256
STREAM_GRACE = 0.5
"""Seconds stream sessions keep receiving at least after the last exchange ended."""
TICK = 0.05
"""Seconds between the worker's lag measurements and folds of recorded latencies."""
FOLD_AT_LEAST = 1_000
"""Latencies a tick waits for before it folds them (the interval's end folds the rest)."""
SWEEP = 0.5
"""Seconds between sweeps for exchanges pending longer than the timeout (at most)."""
COUNT_POLL = 0.001
"""Seconds between looks at the exchanges still pending once the request count is spent."""
FIRST_INTERVAL = 0.1
"""Seconds of the warmup's first interval (then aligned to the interval): the first figures
come a tenth of a second after the start, not a whole interval."""
CLOSE_TIMEOUT = 2.0
"""Seconds the worker waits at least for its sessions to close (a plugin may hang there)."""

Driver = ClosedDriver | ArrivalDriver | StreamDriver


class FrameWriter:
    """Writes frames to the saved stdout (blocking writes of small frames)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, kind: FrameKind, payload: Any) -> None:
        data = encode_frame(kind, payload)
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


class ControlReader(asyncio.Protocol):
    """Frames from the controller on stdin, delivered to an asyncio queue."""

    def __init__(self, queue: asyncio.Queue[tuple[FrameKind, Any]]) -> None:
        self.queue = queue
        self.decoder = FrameDecoder()

    def data_received(self, data: bytes) -> None:
        for frame in self.decoder.feed(data):
            self.queue.put_nowait(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self.queue.put_nowait((FrameKind.EOF, None))


class Worker:
    """One worker's sessions, drivers and interval reporting."""

    def __init__(self, spec: WorkerSlice, target: str, out: FrameWriter) -> None:
        self.spec = spec
        self.target = target
        self.plan = spec.plan
        self.out = out
        self.plugin = registry.load(self.plan.protocol)
        self.state = RunState()
        self.recorders: dict[str, OpRecorder] = {}
        self.slots: dict[str, list[Slot]] = {}
        self.drivers: list[Driver] = []
        self.reactors: dict[str, Reactor] = {}
        """Each group's stamped sockets, when the run reads the kernel's clock."""
        self.max_lag = 0.0
        self.state.counted = spec.requests is not None
        self.done_at: float | None = None
        """When this worker's share of the request count had all ended (monotonic)."""
        self._counting: asyncio.Task[None] | None = None

    def _reactor(self, group: str) -> Reactor | None:
        """The group's reactor when the run asks for the kernel's clock and the kernel has it."""
        if self.plan.clock != KERNEL:
            return None
        support = probe()
        if not support.receive:
            return None
        reactor = self.reactors.get(group)
        if reactor is None:
            reactor = self.reactors[group] = Reactor(send=support.send)
        return reactor

    def _contexts(
        self, group: GroupPlan, part: GroupSlice, recorder: OpRecorder
    ) -> list[SessionContext]:
        options = self.plugin.options.model_validate(self.plan.options)
        params = self.plugin.operations[group.op].model_validate(group.params)
        return [
            SessionContext(
                target=self.target,
                group=group.name,
                op=group.op,
                index=index,
                worker=self.spec.worker,
                params=params,
                options=options,
                timeout=self.plan.timeout,
                count=recorder.count,
                sent=recorder.sent,
                reactor=self._reactor(group.name),
            )
            for index in part.indices
        ]

    async def open_sessions(self) -> dict[str, Any]:
        limiter = asyncio.Semaphore(OPEN_CONCURRENCY)

        async def open_one(slot: Slot) -> bool:
            async with limiter:
                return await slot.open()

        opened = failed = 0
        groups = {g.name: g for g in self.plan.groups}
        for part in self.spec.groups:
            if not part.indices:
                continue
            group = groups[part.name]
            recorder = self.recorders[part.name] = OpRecorder(part.name)
            contexts = self._contexts(group, part, recorder)
            slots = [Slot(self.plugin, ctx, recorder) for ctx in contexts]
            self.slots[part.name] = slots
            results = await asyncio.gather(*(open_one(slot) for slot in slots))
            opened += sum(results)
            failed += len(results) - sum(results)
        hello: dict[str, Any] = {
            "pid": os.getpid(),
            "opened": opened,
            "failed": failed,
            "clock": self.clocks(),
        }
        if protocols := self.protocols():
            hello["protocols"] = protocols
        if self.plan.clock == KERNEL and not (support := probe()).receive:
            hello["clock_reason"] = support.reason
        return hello

    def protocols(self) -> dict[str, dict[str, int]]:
        """Per group, its open sessions by the protocol they got (those that name one)."""
        out: dict[str, dict[str, int]] = {}
        for name, slots in self.slots.items():
            for slot in slots:
                got = slot.session.negotiated if slot.session is not None else None
                if got is not None:
                    counts = out.setdefault(name, {})
                    counts[got] = counts.get(got, 0) + 1
        return out

    def clocks(self) -> dict[str, dict[str, int]]:
        """Per group, how many open sessions read the kernel's receive and send stamps."""
        out = {}
        for name, slots in self.slots.items():
            stamps = [slot.ctx.stamps for slot in slots if slot.session is not None]
            out[name] = {
                "sessions": len(stamps),
                "kernel_receive": sum(s.kernel_receive for s in stamps),
                "kernel_send": sum(s.kernel_send for s in stamps),
            }
        return out

    def build_drivers(self, ramp_seconds: float) -> None:
        groups = {g.name: g for g in self.plan.groups}
        for part in self.spec.groups:
            if not part.indices:
                continue
            group, slots, recorder = (
                groups[part.name],
                self.slots[part.name],
                self.recorders[part.name],
            )
            streams = [s for s in slots if isinstance(s.session, StreamSession)]
            if streams and len(streams) == len(slots):
                self.drivers.append(StreamDriver(slots, recorder, self.state))
            elif group.every is not None:
                for position, slot in zip(part.indices, slots, strict=True):
                    self.drivers.append(
                        ArrivalDriver(
                            [slot],
                            recorder,
                            self.state,
                            rate=1.0 / group.every,
                            ramp_to=None,
                            ramp_seconds=ramp_seconds,
                            phase_offset=position / group.count,
                        )
                    )
            elif part.rate is not None:
                self.drivers.append(
                    ArrivalDriver(
                        slots,
                        recorder,
                        self.state,
                        part.rate,
                        part.ramp_to,
                        ramp_seconds,
                        precision_ns=int(self.plan.pacing_precision * 1e9),
                        reactor=self.reactors.get(part.name),
                    )
                )
            else:
                self.drivers.append(ClosedDriver(slots, recorder, self.state))

    def pending(self) -> int:
        """Exchanges not ended yet, over every driver of exchanges."""
        return sum(d.pending for d in self.drivers if isinstance(d, ExchangeDriver))

    def count_from_here(self) -> None:
        """The sustain begins: its request count starts (this worker's share of it).

        What is pending now ends in sustain and counts there, so fewer start;
        once the count is spent and all of it has ended, ``DONE`` tells the
        controller, which ends the sustain of every worker when all are done.
        """
        quota = self.spec.requests
        if quota is None:
            return
        self.state.allow(quota - self.pending())
        self._counting = asyncio.get_running_loop().create_task(self._count_reached())

    async def _count_reached(self) -> None:
        await self.state.spent.wait()
        while self.pending():  # noqa: ASYNC110 - polled only once the count is spent
            await asyncio.sleep(COUNT_POLL)
        self.done_at = time.monotonic()
        self.out.send(FrameKind.DONE, {"worker": self.spec.worker})

    def read_arrived(self) -> None:
        """Take up the replies that lazy reads left waiting (before timeouts or an interval)."""
        for driver in self.drivers:
            if isinstance(driver, ExchangeDriver):
                driver.read_arrived()

    def sweep(self, final: bool = False) -> None:
        """Count exchanges pending longer than the timeout (and, with ``final``, the rest)."""
        self.read_arrived()
        now = perf_ns()
        for driver in self.drivers:
            if isinstance(driver, ExchangeDriver):
                driver.sweep(now, self.plan.timeout, final)

    def accrue_down(self) -> None:
        """Add the time sessions have been down since the last accrual to this interval."""
        now = perf_ns()
        for slots in self.slots.values():
            for slot in slots:
                if slot.down_since:
                    slot.accrue_down(now)

    def flush(self, phase: str, index: int, t0: float, t1: float) -> None:
        ops = {name: rec.flush().to_wire() for name, rec in self.recorders.items()}
        self.out.send(
            FrameKind.STATS,
            {
                "worker": self.spec.worker,
                "phase": phase,
                "index": index,
                "t0": round(t0, 6),
                "t1": round(t1, 6),
                "ops": ops,
                "lag_ms": round(self.max_lag * 1e3, 3),
                "inflight": sum(getattr(d, "inflight", 0) for d in self.drivers),
            },
        )
        self.max_lag = 0.0

    async def tick(self) -> None:
        """Every :data:`TICK`: measure the event loop's lag, and fold the latencies recorded
        since the last fold once :data:`FOLD_AT_LEAST` wait (so the interval's end does not
        stall the loop, and a slow run does not fold a few values 20 times a second);
        every :data:`SWEEP` (or a quarter of the timeout), count overdue exchanges."""
        loop = asyncio.get_running_loop()
        sweep_every = max(TICK, min(SWEEP, self.plan.timeout / 4))
        next_sweep = loop.time() + sweep_every
        while True:
            expected = loop.time() + TICK
            await asyncio.sleep(TICK)
            now = loop.time()
            self.max_lag = max(self.max_lag, now - expected)
            WALL.resync()
            for recorder in self.recorders.values():
                recorder.fold_pending(FOLD_AT_LEAST)
            if now >= next_sweep:
                next_sweep = now + sweep_every
                self.sweep()

    async def run(self, start_at: float, stop_requested: asyncio.Event) -> None:
        """Run the phases from the monotonic time ``start_at``: warmup and sustain (ended early
        by ``stop_requested``), then the drain; one ``STATS`` frame per interval."""
        tasks = await self._begin(start_at)
        await self._measure(start_at, stop_requested)
        sessions = self._stop_load()
        drain_start = time.monotonic()
        await self._drain(sessions, drain_start + self.plan.drain)
        if self._counting is not None:
            tasks.append(self._counting)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.sweep(final=True)
        self.flush("drain", 0, 0.0, time.monotonic() - drain_start)

    async def _begin(self, start_at: float) -> list[asyncio.Task[None]]:
        """At the common start: the run's clock, the sessions not open counted down, and the
        tick and every driver started (their tasks)."""
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        start_ns = time.perf_counter_ns()
        self.state.begin(start_ns)
        for slots in self.slots.values():
            for slot in slots:
                slot.down_since = start_ns if slot.session is None else 0
        tasks: list[asyncio.Task[None]] = [asyncio.create_task(self.tick())]
        if self.plan.warmup <= 0:
            self.count_from_here()  # before the first exchange
        for driver in self.drivers:
            if isinstance(driver, ClosedDriver):
                driver.start()
            elif isinstance(driver, ArrivalDriver):
                tasks.append(asyncio.create_task(driver.run(start_ns)))
            else:
                tasks.append(asyncio.create_task(driver.run()))
        return tasks

    async def _measure(self, start_at: float, stop_requested: asyncio.Event) -> None:
        """The warmup, then the sustain phase (a phase of no length is skipped); a stop ends
        them early."""
        phase_start = start_at
        for phase, length in (("warmup", self.plan.warmup), ("sustain", self.plan.duration)):
            if length <= 0:
                continue
            if phase == "sustain" and self.plan.warmup > 0:
                self.count_from_here()  # right after the warmup's last report: nothing between
            if await self._phase(phase, phase_start, length, stop_requested):
                return
            phase_start += length

    async def _phase(
        self, phase: str, phase_start: float, length: float, stop_requested: asyncio.Event
    ) -> bool:
        """One phase's intervals, each reported as it ends; True when a stop ended it. Once a
        request count has ended the load, its last interval ends when the last exchange did."""
        interval = self.plan.interval
        phase_end = phase_start + length
        early = phase == "warmup" and interval > 4 * FIRST_INTERVAL
        index = 0
        t0 = phase_start
        while True:
            tick = min(phase_end, phase_start + interval_end(index, interval, early))
            stopped = await _wait_until(tick, stop_requested)
            end = min(time.monotonic(), tick)
            if self.done_at is not None:
                end = max(t0, min(end, self.done_at))
            self.sweep()
            self.accrue_down()
            self.flush(phase, index, t0 - phase_start, end - phase_start)
            index += 1
            t0 = end
            if stopped or tick >= phase_end:
                return stopped

    def _stop_load(self) -> list[Session]:
        """End the load: no new exchange, no session wanted; tell the open sessions."""
        self.state.stop()
        for slots in self.slots.values():
            for slot in slots:
                slot.down_since = 0  # the run no longer wants sessions
        sessions = [s.session for slots in self.slots.values() for s in slots if s.session]
        for session in sessions:
            session.stopping()
        return sessions

    async def _drain(self, sessions: list[Session], deadline: float) -> None:
        """Until ``deadline`` at most: the exchanges in flight end, then stream sessions keep
        receiving for :data:`STREAM_GRACE` at least and until every one is settled."""
        while time.monotonic() < deadline and self._exchanging():  # noqa: ASYNC110 - polled
            await asyncio.sleep(0.01)
        if not any(isinstance(d, StreamDriver) for d in self.drivers):
            return
        grace_end = time.monotonic() + STREAM_GRACE
        streams = [s for s in sessions if isinstance(s, StreamSession)]
        while (now := time.monotonic()) < deadline and (  # noqa: ASYNC110
            now < grace_end or not all(s.settled() for s in streams)
        ):
            await asyncio.sleep(0.01)

    def _exchanging(self) -> bool:
        """Some exchange is still in flight (the stream sessions' aside)."""
        exchanges = (d for d in self.drivers if not isinstance(d, StreamDriver))
        return any(d.inflight for d in exchanges)

    async def close(self) -> None:
        """Close every session, waiting :data:`CLOSE_TIMEOUT` (or the timeout) at most."""
        closes = [slot.close() for slots in self.slots.values() for slot in slots]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*closes, return_exceptions=True),
                max(CLOSE_TIMEOUT, self.plan.timeout),
            )
        await asyncio.sleep(0)  # the closed transports' connection_lost callbacks
        for reactor in self.reactors.values():
            reactor.close()


def interval_end(index: int, interval: float, early: bool) -> float:
    """Seconds from a phase's start to the end of its interval ``index``; ``early``: the first
    ends after :data:`FIRST_INTERVAL`, the next ones on whole intervals (0.1, 1, 2...)."""
    if not early:
        return (index + 1) * interval
    return FIRST_INTERVAL if index == 0 else index * interval


async def _wait_until(deadline: float, stop: asyncio.Event) -> bool:
    """Sleep until the monotonic ``deadline``; return True if a stop came first."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return stop.is_set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=remaining)
    return stop.is_set()


def apply_control(state: RunState, kind: FrameKind, payload: Any) -> None:
    """Apply a ``PAUSE``, ``RESUME`` or ``RATE`` frame to the run's state."""
    if kind is FrameKind.PAUSE:
        state.pause()
    elif kind is FrameKind.RESUME:
        state.resume()
    elif kind is FrameKind.RATE:
        state.rate_factor = float(payload["factor"])


async def heartbeat(out: FrameWriter, period: float) -> None:
    """A ``BEAT`` frame every ``period`` seconds: this worker's loop is alive."""
    while True:
        out.send(FrameKind.BEAT, {})
        await asyncio.sleep(period)


STOPS = frozenset({FrameKind.STOP, FrameKind.EOF})
"""What ends a worker: a ``STOP`` frame, or the controller gone (its stdin closed)."""


async def serve_controller(out: FrameWriter) -> None:
    """Take the plan (controls before it are held), then serve the run; ``BYE`` at the end."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[FrameKind, Any]] = asyncio.Queue()
    await loop.connect_read_pipe(lambda: ControlReader(queue), sys.stdin.buffer)
    held: list[tuple[FrameKind, Any]] = []
    while True:
        kind, payload = await queue.get()
        if kind in STOPS:
            out.send(FrameKind.BYE, {})
            return
        if kind is FrameKind.PLAN:
            break
        if kind not in CONTROL:
            raise RuntimeError(f"expected PLAN, got {kind}")
        held.append((kind, payload))
    spec = WorkerSlice.from_dict(payload["slice"])
    worker = Worker(spec, payload["target"], out)
    for kind, payload in held:
        apply_control(worker.state, kind, payload)
    beat = asyncio.create_task(heartbeat(out, spec.plan.interval))
    try:
        await _serve_run(worker, queue, out)
    finally:
        beat.cancel()


async def _serve_run(
    worker: Worker, queue: asyncio.Queue[tuple[FrameKind, Any]], out: FrameWriter
) -> None:
    """Open the sessions (``HELLO``), wait for ``GO`` (controls before it applied), run."""
    spec = worker.spec
    out.send(FrameKind.HELLO, await worker.open_sessions())
    stop_requested = asyncio.Event()
    start_at: float | None = None
    while start_at is None:
        kind, payload = await queue.get()
        if kind is FrameKind.GO:
            start_at = float(payload["start_at"])
        elif kind in STOPS:
            await worker.close()
            out.send(FrameKind.BYE, {})
            return
        else:
            apply_control(worker.state, kind, payload)
    worker.build_drivers(ramp_seconds=spec.plan.warmup + spec.plan.duration)

    async def control() -> None:
        while True:
            kind, payload = await queue.get()
            if kind in STOPS:
                stop_requested.set()
                return
            apply_control(worker.state, kind, payload)

    control_task = asyncio.create_task(control())
    try:
        await worker.run(start_at, stop_requested)
    finally:
        control_task.cancel()
        await worker.close()
    out.send(FrameKind.BYE, {})


def main() -> int:
    die_with_parent()
    log_path = sys.argv[1] if len(sys.argv) > 1 else os.devnull
    out = FrameWriter(os.dup(1))
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    raise_fd_limit()
    tighten_timer_slack()
    try:
        uvloop.run(serve_controller(out))
    except Exception as exc:
        traceback.print_exc()
        out.send(FrameKind.ERROR, {"message": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
