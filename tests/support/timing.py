"""The tests' one time unit, which an environment variable stretches on a busy machine.

Every wait of a test that is not itself under test (a server's start, a
process's readiness, a pause that lets something happen) is written as a
multiple of :data:`MS` or :data:`S`. ``PROTOBENCH_TEST_TIMESCALE`` (a number
>= 1) multiplies them all, and the per-test time limit with them (see
``tests/conftest.py``): ``PROTOBENCH_TEST_TIMESCALE=5 make test`` gives every
readiness limit five times as long. Unset, the scale is the one-minute load
average per CPU at the start of the session (at least 1, at most
:data:`AUTO_LIMIT`), so a machine busy with other jobs stretches the waits by
itself; pytest's header line ``time scale:`` says which was used. Timeouts
whose effect a test asserts (an op's timeout, a keepalive period) are the
behaviour under test and stay as written.

A wait for a condition is a poll bounded by a scaled limit (:func:`until`,
:func:`eventually`), not a fixed sleep. A unit test that counts what happened
in a time window measures how late its own event loop woke meanwhile
(:func:`loop_lag`) and allows for exactly what the machine took, no more.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import AsyncIterator, Callable

SCALE_VARIABLE = "PROTOBENCH_TEST_TIMESCALE"

AUTO_LIMIT = 10.0
"""The largest scale taken from the load average when the variable is not set."""


def _scale() -> float:
    text = os.environ.get(SCALE_VARIABLE)
    if text is None:
        busy = os.getloadavg()[0] / (os.cpu_count() or 1)
        return min(max(1.0, round(busy, 1)), AUTO_LIMIT)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 1:
        raise ValueError(f"{SCALE_VARIABLE}={text!r}: expected a number >= 1")
    return value


SCALE = _scale()
"""How much longer than on a quiet machine every wait may be."""

MS = 0.001 * SCALE
"""One millisecond of waiting, stretched by ``PROTOBENCH_TEST_TIMESCALE``."""

S = 1000 * MS
"""One second of waiting, stretched by ``PROTOBENCH_TEST_TIMESCALE``."""

POLL = 0.02
"""Seconds between two looks at a condition (not scaled: a poll ends when the condition holds)."""


def until(condition: Callable[[], bool], limit: float, what: str) -> None:
    """Return as soon as ``condition()`` holds; fail the test after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {limit:.1f} s"
        time.sleep(POLL)


async def eventually(condition: Callable[[], bool], limit: float, what: str) -> None:
    """:func:`until` in an event loop: the loop runs while the condition is awaited."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {limit:.1f} s"
        await asyncio.sleep(POLL)


@contextlib.asynccontextmanager
async def loop_lag(step: float = 0.005) -> AsyncIterator[list[float]]:
    """Seconds the running loop woke late for a ``step``-long sleep, sampled during the block."""
    lags: list[float] = []

    async def probe() -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(step)
            lags.append(max(0.0, time.perf_counter() - start - step))

    task = asyncio.create_task(probe())
    try:
        yield lags
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
