"""The embedded targets' delay line: every item released exactly once, never early, in order."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
import uvloop

from protobench.targets.delays import DelayLine

MODES = pytest.mark.parametrize("timerfd", [True, False], ids=["timerfd", "call_later"])


async def _release_all(line: DelayLine, dues: list[int]) -> list[tuple[int, int, int]]:
    """Queue one item per due time; wait until all ran. ``(index, due, released_at)``."""
    released: list[tuple[int, int, int]] = []
    done = asyncio.get_running_loop().create_future()

    def release(index: int, due: int) -> None:
        released.append((index, due, time.monotonic_ns()))
        if len(released) == len(dues) and not done.done():
            done.set_result(None)

    for index, due in enumerate(dues):
        line.call_at(due, release, index, due)
    await asyncio.wait_for(done, 5)
    return released


@MODES
def test_every_item_once_never_early_in_due_then_queue_order(timerfd: bool) -> None:
    """Dues in the past, now, equal, out of order and spread over 30 ms, queued in bursts
    while others are being released (how a server queues them)."""

    async def main() -> None:
        line = DelayLine(asyncio.get_running_loop(), timerfd=timerfd)
        rng = random.Random(7)
        start = time.monotonic_ns()
        dues = [start + rng.choice([-1_000_000, 0, 5_000_000, rng.randrange(30_000_000)])]
        for _ in range(1_999):
            dues.append(dues[-1] if rng.random() < 0.2 else start + rng.randrange(30_000_000))
        released = await _release_all(line, dues[:1_000])
        await asyncio.sleep(0.002)  # the rest is queued while the line is armed and busy
        later = await _release_all(line, dues[1_000:])
        assert len(line) == 0
        line.close()
        assert sorted(index for index, _, _ in released) == list(range(1_000))
        assert sorted(index for index, _, _ in later) == list(range(1_000))
        for batch in (released, later):
            assert all(at >= due for _, due, at in batch), "released before its due time"
            assert [(due, index) for index, due, _ in batch] == sorted(
                (due, index) for index, due, _ in batch
            )

    uvloop.run(main())


@MODES
def test_a_failing_callback_is_reported_and_the_rest_still_run(timerfd: bool) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        failures: list[object] = []
        loop.set_exception_handler(lambda _, context: failures.append(context["exception"]))
        line = DelayLine(loop, timerfd=timerfd)
        due = time.monotonic_ns() + 2_000_000

        def fail() -> None:
            raise RuntimeError("boom")

        line.call_at(due, fail)
        released = await _release_all(line, [due, due + 1_000_000])
        line.close()
        assert [index for index, _, _ in released] == [0, 1]
        assert [str(failure) for failure in failures] == ["boom"]

    uvloop.run(main())


@MODES
def test_items_queued_by_a_released_callback_are_released(timerfd: bool) -> None:
    """A callback that queues more work (an earlier and a later item) loses none of it."""

    async def main() -> None:
        line = DelayLine(asyncio.get_running_loop(), timerfd=timerfd)
        seen: list[str] = []
        finished = asyncio.get_running_loop().create_future()

        def first() -> None:
            now = time.monotonic_ns()
            line.call_at(now + 3_000_000, seen.append, "late")
            line.call_at(now + 1_000_000, seen.append, "soon")
            line.call_at(now + 4_000_000, finished.set_result, None)

        line.call_at(time.monotonic_ns() + 1_000_000, first)
        await asyncio.wait_for(finished, 5)
        line.close()
        assert seen == ["soon", "late"]

    uvloop.run(main())


def test_sleep_until_is_not_early_and_close_drops_the_rest() -> None:
    async def main() -> None:
        line = DelayLine(asyncio.get_running_loop())
        due = time.monotonic_ns() + 3_000_000
        await line.sleep_until(due)
        assert time.monotonic_ns() >= due
        abandoned = line.sleep_until(time.monotonic_ns() + 1_000_000)
        abandoned.cancel()  # a connection that went away: releasing it is harmless
        await asyncio.sleep(0.003)
        line.call_at(time.monotonic_ns() + 1_000_000_000, pytest.fail, "released after close")
        assert len(line) == 1
        line.close()
        assert len(line) == 0

    uvloop.run(main())
