"""The open model's timer: never early, asleep (not spinning) while it waits, re-armable."""

from __future__ import annotations

import asyncio
import time

import uvloop

from protobench.engine.waker import Timer, tighten_timer_slack
from tests.support.timing import MS, SCALE

perf_ns = time.perf_counter_ns


async def _fire_in_steps(step_ns: int, steps: int) -> list[int]:
    """Arm the timer ``steps`` times ``step_ns`` apart; return how late each callback was."""
    lateness: list[int] = []
    done = asyncio.get_running_loop().create_future()
    due = perf_ns() + step_ns

    def fired() -> None:
        nonlocal due
        lateness.append(perf_ns() - due)
        if len(lateness) == steps:
            done.set_result(None)
            return
        due += step_ns
        timer.arm(due)

    timer = Timer(fired)
    try:
        timer.arm(due)
        await done
    finally:
        timer.close()
    return lateness


def test_callbacks_never_come_before_their_deadline() -> None:
    tighten_timer_slack()
    lateness = uvloop.run(_fire_in_steps(137_000, 300))
    assert min(lateness) >= 0


def test_sub_millisecond_deadlines_leave_the_cpu_idle() -> None:
    """200 µs apart (5,000/s): the process sleeps in ``epoll`` instead of spinning."""
    cpu0, wall0 = time.process_time(), time.monotonic()
    uvloop.run(_fire_in_steps(200_000, 1_000))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    assert wall >= 0.2
    assert cpu < 0.5 * wall, (cpu, wall)


def test_a_fired_timer_left_disarmed_does_not_call_back_again() -> None:
    """The callback does not re-arm: the descriptor's readiness is cleared, no second call."""
    calls: list[int] = []

    async def main() -> None:
        timer = Timer(lambda: calls.append(perf_ns()))
        try:
            timer.arm(perf_ns() + 1_000_000)
            await asyncio.sleep(0.05)
            assert timer.deadline == 0
        finally:
            timer.close()

    uvloop.run(main())
    assert len(calls) == 1


def test_rearming_replaces_the_deadline_and_disarm_cancels() -> None:
    calls: list[int] = []

    async def main() -> int:
        timer = Timer(lambda: calls.append(perf_ns()))
        try:
            start = perf_ns()
            timer.arm(start + 2_000_000_000)
            timer.arm(start + 20_000_000)  # replaces the 2 s deadline
            await asyncio.sleep(100 * MS)
            timer.arm(perf_ns() + 10_000_000)
            timer.disarm()
            await asyncio.sleep(0.05)
            return start
        finally:
            timer.close()

    start = uvloop.run(main())
    assert len(calls) == 1
    assert 20_000_000 <= calls[0] - start < 20_000_000 + 70_000_000 * SCALE
