"""The sinks of a run: bounded buffers that never make the publisher wait, the report last."""

from __future__ import annotations

import subprocess
import sys
import threading

import anyio
import anyio.lowlevel
import pytest

from protobench.engine.events import Event, IntervalUpdate, Notice, PhaseChanged, RunFinished
from protobench.engine.sinks import Each, Fanout, Subscription

pytestmark = pytest.mark.anyio


def _interval(index: int) -> IntervalUpdate:
    return IntervalUpdate("sustain", index, float(index + 1), 1.0, {}, {}, 0.0, 0)


FINISHED = RunFinished({"partial": False}, 0)


async def _read(subscription: Subscription) -> list[Event]:
    return [event async for event in subscription]


async def test_a_full_buffer_drops_the_oldest_intervals_and_says_so_before_the_report() -> None:
    subscription = Subscription("ndjson", limit=3)
    subscription.offer(PhaseChanged("sustain", 0.0))
    for index in range(10):
        subscription.offer(_interval(index))
    subscription.offer(Notice("worker", "worker 1 failed", 5.0))
    subscription.offer(FINISHED)
    subscription.close()
    events = await _read(subscription)
    assert subscription.lost == 7
    assert events[0] == PhaseChanged("sustain", 0.0)
    assert [e.index for e in events if isinstance(e, IntervalUpdate)] == [7, 8, 9]
    assert events[-3] == Notice("worker", "worker 1 failed", 5.0)
    lost = events[-2]
    assert isinstance(lost, Notice)
    assert (lost.kind, lost.elapsed, lost.details) == ("ndjson", 7.0, {"lost": 7})
    assert lost.message.startswith("7 interval and resource events were left out")
    assert events[-1] is FINISHED


async def test_a_sink_that_keeps_up_gets_everything_and_no_lost_notice() -> None:
    subscription = Subscription("progress", limit=3)
    received: list[Event] = []
    async with anyio.create_task_group() as group:
        group.start_soon(Each("progress", received.append).consume, subscription)
        for index in range(10):
            subscription.offer(_interval(index))
            await anyio.lowlevel.checkpoint()
        subscription.offer(FINISHED)
        subscription.close()
    assert [e.index for e in received if isinstance(e, IntervalUpdate)] == list(range(10))
    assert received[-1] is FINISHED
    assert subscription.lost == 0


class Stuck:
    """A sink whose consumer stops reading until it is let go (a blocked stdout pipe)."""

    name = "stuck"

    def __init__(self) -> None:
        self.go = anyio.Event()
        self.reading = anyio.Event()
        self.received: list[Event] = []

    async def consume(self, events: Subscription) -> None:
        async for event in events:
            self.received.append(event)
            self.reading.set()
            await self.go.wait()


class Broken:
    name = "broken"

    async def consume(self, events: Subscription) -> None:
        async for _ in events:
            raise RuntimeError("bug")


async def test_a_stuck_sink_never_stalls_the_others_and_a_broken_one_is_reported() -> None:
    failures: list[tuple[str, str]] = []
    fanout = Fanout(lambda name, exc: failures.append((name, str(exc))))
    stuck = Stuck()
    fast: list[Event] = []
    fanout.attach(stuck, limit=2)
    fanout.attach(Broken())
    fanout.attach(Each("fast", fast.append))
    async with fanout.running():
        for index in range(50):
            fanout.publish(_interval(index))  # never waits, however stuck a sink is
            await anyio.lowlevel.checkpoint()
        assert len(fast) == 50
        assert len(stuck.received) == 1
        fanout.publish(FINISHED)
        stuck.go.set()  # the pipe drains: the stuck sink reads the rest
    assert failures == [("broken", "bug")]
    assert fast[-1] is FINISHED
    assert stuck.received[-1] is FINISHED
    assert isinstance(stuck.received[-2], Notice)
    assert stuck.received[-2].details == {"lost": 47}


async def test_abandon_stops_waiting_for_a_sink_stuck_after_the_run() -> None:
    stuck = Stuck()
    fanout = Fanout(lambda name, exc: None)
    fanout.attach(stuck)
    fanout.abandon()  # during the run: nothing to abandon yet
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:

            async def run() -> None:
                async with fanout.running():
                    fanout.publish(FINISHED)

            group.start_soon(run)
            await stuck.reading.wait()
            fanout.abandon()  # the run is over, the sink is stuck: a repeated Ctrl-C
    assert stuck.received == [FINISHED]


def test_the_controller_imports_no_snapshot_store() -> None:
    code = "import sys, protobench.engine.controller; print(sorted(sys.modules))"
    modules = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert "protobench.snapshots" not in modules


async def test_a_blocking_callback_runs_off_the_event_loop_thread() -> None:
    threads: list[int] = []
    subscription = Subscription("progress")
    subscription.offer(FINISHED)
    subscription.close()
    await Each("progress", lambda _: threads.append(threading.get_ident()), blocking=True).consume(
        subscription
    )
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()
