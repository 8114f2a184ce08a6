"""The open model's driver with fake sessions: each arrival once, pauses skipped, no spin,
batches of arrivals closer than the precision, send lateness recorded.

The sessions here complete inside ``submit`` or after a fixed delay, so the
number of exchanges over a bounded time is known from the rate.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, cast
from unittest.mock import patch

import pytest
import uvloop

from protobench.cli.run_flags import RunFlags
from protobench.engine.metrics import OpRecorder, decode, summary
from protobench.engine.plan import Overrides, resolve
from protobench.engine.schedule import ArrivalDriver, RunState, Slot
from protobench.engine.waker import Timer
from protobench.profiles import loader
from protobench.protocols.base import CallbackSession, Done, NoParams, SessionContext
from tests.support.timing import MS, loop_lag


class _Session(CallbackSession):
    """Completes every exchange ``delay`` seconds after it starts (0: inside ``submit``)."""

    def __init__(self, delay: float, submits: list[int]) -> None:
        self.delay = delay
        self.submits = submits

    def submit(self, done: Done) -> None:
        self.submits.append(time.perf_counter_ns())
        if self.delay:
            asyncio.get_running_loop().call_later(self.delay, done, None, 0)
        else:
            done(None, 0)

    async def close(self) -> None:
        return None


def _context() -> SessionContext:
    """A session's context for a slot whose session the test sets itself."""
    return SessionContext("", "op", "op", 0, 0, NoParams(), NoParams(), 1.0)


def _driver(
    sessions: int, delay: float, rate: float, submits: list[int]
) -> tuple[ArrivalDriver, RunState]:
    recorder, state = OpRecorder("op"), RunState()
    slots = []
    for _ in range(sessions):
        slot = Slot(cast(Any, None), _context(), recorder)
        slot.session = _Session(delay, submits)
        slots.append(slot)
    return ArrivalDriver(slots, recorder, state, rate, None, 1.0), state


def test_a_session_completing_inside_submit_takes_each_arrival_once() -> None:
    submits: list[int] = []

    async def main() -> int:
        driver, state = _driver(1, 0.0, 1_000.0, submits)
        start = time.perf_counter_ns()
        task = asyncio.create_task(driver.run(start))
        await asyncio.sleep(200 * MS)
        state.stop()
        await task
        return start

    start = uvloop.run(main())
    due = 1 + (submits[-1] - start) // 1_000_000  # 1,000/s for as long as it ran, not twice that
    assert due - 5 <= len(submits) <= due + 5, (len(submits), due)


def test_a_pause_is_skipped_by_the_schedule_at_once() -> None:
    submits: list[int] = []
    marks: dict[str, int] = {}

    async def main() -> list[float]:
        driver, state = _driver(2, 0.002, 1_000.0, submits)
        task = asyncio.create_task(driver.run(time.perf_counter_ns()))
        await asyncio.sleep(0.1)
        state.pause()
        marks["paused"] = time.perf_counter_ns()
        await asyncio.sleep(0.3)
        async with loop_lag() as lags:
            marks["resumed"] = time.perf_counter_ns()
            state.resume()
            await asyncio.sleep(0.1)
        state.stop()
        await task
        return lags

    lags = uvloop.run(main())
    during = [t for t in submits if marks["paused"] + 3_000_000 < t < marks["resumed"]]
    after = [t for t in submits if t >= marks["resumed"]]
    assert during == []
    # the paused 0.3 s neither comes back as a burst nor delays what follows: 1,000/s from
    # the resume to the last send (0.1 s), less what a busy host took from the loop
    due = (after[-1] - marks["resumed"]) // 1_000_000
    lost = 1_000 * sum(lags)  # sends the loop's late wake-ups cost (0 on a quiet machine)
    assert 0.8 * due - lost <= len(after) <= 1.1 * due, (len(after), due, lost)
    assert after[0] - marks["resumed"] < 5_000_000 + 1e9 * max(lags, default=0), lags


def test_a_driver_with_every_session_busy_sleeps() -> None:
    submits: list[int] = []

    async def main() -> tuple[float, int]:
        driver, state = _driver(2, 0.05, 40_000.0, submits)  # arrivals 25 µs apart
        cpu = time.process_time()
        start = time.perf_counter_ns()
        task = asyncio.create_task(driver.run(start))
        await asyncio.sleep(0.5)
        state.stop()
        window = time.perf_counter_ns() - start  # 0.5 s, or longer on a busy machine
        await task
        return time.process_time() - cpu, window

    cpu, window = uvloop.run(main())
    paced = 2 * (1 + window // 50_000_000)  # the sessions' pace: 2 x 20/s
    assert len(submits) <= paced, (len(submits), paced)
    assert cpu < 0.25, cpu  # not yielding to the loop every 25 µs for 0.5 s


def test_arrivals_closer_than_the_precision_leave_in_batches() -> None:
    """40,000/s (25 µs apart) with 100 µs of precision: a few arrivals per wake-up, not one."""
    submits: list[int] = []
    arms: list[int] = []

    async def main() -> OpRecorder:
        driver, state = _driver(8, 0.0, 40_000.0, submits)
        real_arm = Timer.arm

        def arm(timer: Timer, deadline_ns: int) -> None:
            arms.append(deadline_ns)
            real_arm(timer, deadline_ns)

        with patch.object(Timer, "arm", arm):
            task = asyncio.create_task(driver.run(time.perf_counter_ns()))
            await asyncio.sleep(200 * MS)
            state.stop()
            await task
        return driver.recorder

    recorder = uvloop.run(main())
    assert len(submits) > 1_000
    assert len(arms) < len(submits) / 2, (len(arms), len(submits))
    # the lateness of every send to a free session is recorded, never negative (never before
    # its intended time); the rest waited in the backlog (a session completing inside submit
    # takes up arrivals before it is free again) and are counted as late
    interval = recorder.flush()
    lateness = summary(decode(interval.hist_lateness))
    assert lateness["count"] <= len(submits) <= lateness["count"] + interval.late
    assert lateness["min"] >= 0


def test_arrivals_further_apart_than_the_precision_each_get_their_wake_up() -> None:
    """2,000/s (500 µs apart): the timer is armed at each intended time, with no batching."""
    submits: list[int] = []
    arms: list[int] = []

    async def main() -> None:
        driver, state = _driver(2, 0.0, 2_000.0, submits)
        real_arm = Timer.arm

        def arm(timer: Timer, deadline_ns: int) -> None:
            arms.append(deadline_ns)
            real_arm(timer, deadline_ns)

        with patch.object(Timer, "arm", arm):
            start = time.perf_counter_ns()
            task = asyncio.create_task(driver.run(start))
            await asyncio.sleep(100 * MS)
            state.stop()
            await task
        assert arms
        assert all((deadline - start) % 500_000 == 0 for deadline in arms)

    uvloop.run(main())


def test_the_pacing_precision_comes_from_the_profile_or_the_flag(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'name = "t"\nprotocol = "http"\ntarget = "http://127.0.0.1:9/"\nrate = "1000/s"\n'
        'pacing_precision = "250us"\n[[group]]\nname = "get"\nop = "request"\ncount = 2\n'
    )
    assert resolve(loader.load(str(profile)), Overrides()).pacing_precision == pytest.approx(250e-6)
    flag = RunFlags({"pacing_precision": "20us"}).overrides()
    assert resolve(loader.load(str(profile)), flag).pacing_precision == pytest.approx(20e-6)
    profile.write_text(profile.read_text().replace('"250us"', '"1s"'))
    with pytest.raises(loader.ProfileError, match="pacing_precision"):
        loader.load(str(profile))


def test_behind_counts_lateness_beyond_the_precision_only() -> None:
    """A send 1.5 ms late is behind with 100 µs of precision, not with 1 ms (its batch)."""
    counts = []
    for precision_ns in (100_000, 1_000_000):
        recorder, state = OpRecorder("op"), RunState()
        slot = Slot(cast(Any, None), _context(), recorder)
        slot.session = _Session(0.0, [])
        driver = ArrivalDriver(
            [slot], recorder, state, 1_000.0, None, 1.0, precision_ns=precision_ns
        )
        driver._free.append(slot)
        uvloop.run(_arrive_late(driver, 1_500_000))
        counts.append(recorder.counters["behind"])
    assert counts == [1, 0]


async def _arrive_late(driver: ArrivalDriver, lateness_ns: int) -> None:
    now = time.perf_counter_ns()
    driver._next = now + 1_000_000_000  # nothing else due: the completion takes up nothing
    driver._arrive(now - lateness_ns, now)


class _Keeping(CallbackSession):
    """Keeps every completion callback it is given; completes each one ``delay`` later."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.callbacks: list[Done] = []

    def submit(self, done: Done) -> None:
        self.callbacks.append(done)
        asyncio.get_running_loop().call_later(self.delay, done, None, 0)

    async def close(self) -> None:
        return None


def test_a_session_gets_one_completion_callback_for_all_its_sends() -> None:
    """No closure per send: the driver binds one callback per session and reuses it."""
    session = _Keeping(0.001)

    async def main() -> None:
        recorder, state = OpRecorder("op"), RunState()
        slot = Slot(cast(Any, None), _context(), recorder)
        slot.session = session
        driver = ArrivalDriver([slot], recorder, state, 200.0, None, 1.0)
        task = asyncio.create_task(driver.run(time.perf_counter_ns()))
        await asyncio.sleep(100 * MS)
        state.stop()
        await task

    uvloop.run(main())
    assert len(session.callbacks) >= 10
    assert all(done is session.callbacks[0] for done in session.callbacks)


def test_a_completion_from_an_abandoned_session_is_not_counted() -> None:
    """The engine gave up on a session (its exchange already counted as a timeout): a late
    completion of it changes nothing, while the slot's new session goes on."""
    old = _Keeping(10.0)
    counts: dict[str, int] = {}

    async def main() -> None:
        recorder, state = OpRecorder("op"), RunState()
        slot = Slot(cast(Any, None), _context(), recorder)
        slot.session = old
        driver = ArrivalDriver([slot], recorder, state, 1_000.0, None, 1.0)
        with patch.object(Slot, "reopen"):
            task = asyncio.create_task(driver.run(time.perf_counter_ns()))
            await asyncio.sleep(0.01)
            assert len(old.callbacks) == 1
            assert driver.inflight == 1
            driver.sweep(time.perf_counter_ns() + 10**10, timeout=1.0)  # abandoned
            assert slot.session is None
            assert driver.inflight == 0
            old.callbacks[0](None, 0)  # the abandoned exchange completes late
            counts["ok"] = len(recorder.latencies)
            counts["inflight"] = driver.inflight
            state.stop()
            await task

    uvloop.run(main())
    assert counts == {"ok": 0, "inflight": 0}
