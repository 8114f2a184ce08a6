"""The open model's precise sleep: never early, and asleep (not spinning) while it waits."""

from __future__ import annotations

import asyncio
import time

import uvloop

from protobench.engine.waker import Waker, tighten_timer_slack

perf_ns = time.perf_counter_ns


async def _sleep_in_steps(step_ns: int, steps: int) -> list[int]:
    """Sleep to ``steps`` deadlines ``step_ns`` apart; return how late each wake-up was."""
    waker = Waker()
    lateness = []
    try:
        due = perf_ns()
        for _ in range(steps):
            due += step_ns
            await waker.sleep_until(due)
            lateness.append(perf_ns() - due)
    finally:
        waker.close()
    return lateness


def test_sleeps_never_wake_before_their_deadline() -> None:
    tighten_timer_slack()
    lateness = uvloop.run(_sleep_in_steps(137_000, 300))
    assert min(lateness) >= 0


def test_sub_millisecond_sleeps_leave_the_cpu_idle() -> None:
    """200 µs apart (5,000/s): the waker sleeps in ``epoll`` instead of spinning to the deadline."""
    cpu0, wall0 = time.process_time(), time.monotonic()
    uvloop.run(_sleep_in_steps(200_000, 1_000))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    assert wall >= 0.2
    assert cpu < 0.5 * wall, (cpu, wall)


def test_wake_ends_a_long_sleep_and_the_next_sleep_is_whole() -> None:
    async def main() -> tuple[int, int]:
        waker = Waker()
        loop = asyncio.get_running_loop()
        try:
            loop.call_later(0.01, waker.wake)
            start = perf_ns()
            await waker.sleep_until(start + 2_000_000_000)
            woken = perf_ns() - start
            due = perf_ns() + 20_000_000  # the old 2 s timer is re-armed, and wake() is spent
            await waker.sleep_until(due)
            return woken, perf_ns() - due
        finally:
            waker.close()

    woken, late = uvloop.run(main())
    assert 5_000_000 <= woken < 500_000_000
    assert late >= 0
