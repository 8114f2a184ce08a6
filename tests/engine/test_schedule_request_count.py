"""A request count (``-n N``) with fake sessions on a real event loop: exactly N exchanges start.

Every driver takes one of the count per exchange it starts (the open model:
per arrival, its backlog still served), a failed reopen in the closed model is
one too (a target that is down ends the run), and once spent nothing starts
again, pause and resume notwithstanding. The count is split over the workers in
whole exchanges that add up to it, and with a count the run's warmup and time
limit are only those given.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest
import uvloop

from protobench.engine.metrics import OpRecorder
from protobench.engine.plan import apportion, resolve, worker_slices
from protobench.engine.schedule import ArrivalDriver, ClosedDriver, RunState, Slot
from protobench.profiles import loader
from protobench.profiles.settings import NO_TIME_LIMIT, Overrides
from protobench.protocols.base import (
    AsyncSession,
    CallbackSession,
    Done,
    ProtocolPlugin,
    Session,
    SessionContext,
)
from protobench.vocab.errors import ErrorClass, OpError


class _Callback(CallbackSession):
    """Completes after ``delay`` seconds (0: inside ``submit``); every ``fail_every``-th fails."""

    def __init__(self, starts: list[int], delay: float = 0.0, fail_every: int = 0) -> None:
        self.starts = starts
        self.delay = delay
        self.fail_every = fail_every

    def submit(self, done: Done) -> None:
        self.starts.append(time.perf_counter_ns())
        failed = self.fail_every and len(self.starts) % self.fail_every == 0
        error = OpError(ErrorClass.PROTOCOL, "503", code="503") if failed else None
        if self.delay:
            asyncio.get_running_loop().call_later(self.delay, done, error, 0)
        else:
            done(error, 0)

    async def close(self) -> None:
        return None


class _Async(AsyncSession):
    def __init__(self, starts: list[int]) -> None:
        self.starts = starts

    async def call(self) -> int:
        self.starts.append(time.perf_counter_ns())
        await asyncio.sleep(0)
        return 1

    async def close(self) -> None:
        return None


class _Refusing(ProtocolPlugin):
    """Every open is refused."""

    name: ClassVar[str] = "fake"
    operations: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self.opens = 0

    async def open_session(self, ctx: SessionContext) -> Session:
        self.opens += 1
        raise OpError(ErrorClass.REFUSED, "refused")


def _ctx() -> SessionContext:
    return SessionContext(
        target="fake://", group="g", op="op", index=0, worker=0,
        params=cast(Any, None), options=cast(Any, None), timeout=1.0,
    )  # fmt: skip


def _slots(sessions: list[Session], recorder: OpRecorder) -> list[Slot]:
    slots = []
    for session in sessions:
        slot = Slot(cast(Any, None), _ctx(), recorder)
        slot.session = session
        slots.append(slot)
    return slots


def _counted() -> RunState:
    """The state of a worker whose slice has a request count (the worker sets ``counted``)."""
    state = RunState()
    state.counted = True
    return state


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    uvloop.run(asyncio.wait_for(main(), 20.0))


async def _until_spent(state: RunState, pending: Callable[[], int]) -> None:
    await state.spent.wait()
    while pending():  # noqa: ASYNC110 - the worker polls the same way
        await asyncio.sleep(0.001)


@pytest.mark.parametrize("delay", [0.0001, 0.002])
@pytest.mark.parametrize("fail_every", [0, 7])
def test_the_closed_model_starts_exactly_the_count(delay: float, fail_every: int) -> None:
    starts: list[int] = []
    recorder, state = OpRecorder("op"), _counted()

    async def main() -> None:
        sessions: list[Session] = [_Callback(starts, delay, fail_every) for _ in range(5)]
        driver = ClosedDriver(_slots(sessions, recorder), recorder, state)
        state.allow(503)
        driver.start()
        await _until_spent(state, lambda: driver.pending)
        await asyncio.sleep(0.05)  # nothing more starts

    _run(main)
    assert len(starts) == 503
    interval = recorder.flush()
    assert interval.ok + sum(interval.errors.values()) == 503
    assert not state.active
    assert state.running


def test_async_sessions_start_exactly_the_count() -> None:
    starts: list[int] = []
    recorder, state = OpRecorder("op"), _counted()

    async def main() -> None:
        sessions: list[Session] = [_Async(starts) for _ in range(3)]
        driver = ClosedDriver(_slots(sessions, recorder), recorder, state)
        state.allow(100)
        driver.start()
        await _until_spent(state, lambda: driver.pending)
        await asyncio.sleep(0.05)

    _run(main)
    assert len(starts) == 100


def test_a_spent_count_stays_spent_through_a_pause_and_a_resume() -> None:
    starts: list[int] = []
    recorder, state = OpRecorder("op"), _counted()

    async def main() -> None:
        sessions: list[Session] = [_Callback(starts, 0.001) for _ in range(2)]
        driver = ClosedDriver(_slots(sessions, recorder), recorder, state)
        state.allow(20)
        driver.start()
        await _until_spent(state, lambda: driver.pending)
        state.pause()
        state.resume()
        await asyncio.sleep(0.05)

    _run(main)
    assert len(starts) == 20
    assert not state.active


def test_what_a_count_takes_before_it_starts_leaves_the_rest() -> None:
    """A warmup's exchanges still in flight count in sustain: the count starts fewer."""
    starts: list[int] = []
    recorder, state = OpRecorder("op"), _counted()

    async def main() -> None:
        sessions: list[Session] = [_Callback(starts, 0.005) for _ in range(4)]
        driver = ClosedDriver(_slots(sessions, recorder), recorder, state)
        driver.start()  # no count yet: the warmup
        await asyncio.sleep(0.02)
        recorder.flush()
        before = len(starts)
        state.allow(30 - driver.pending)
        await _until_spent(state, lambda: driver.pending)
        await asyncio.sleep(0.03)
        assert len(starts) - before == 30 - 4
        interval = recorder.flush()
        assert interval.ok == 30

    _run(main)


@pytest.mark.parametrize("rate", [2_000.0, 50_000.0])
def test_the_open_model_counts_arrivals_and_serves_its_backlog(rate: float) -> None:
    """At 50,000/s on 2 sessions of 2 ms most arrivals wait: every one is still sent."""
    starts: list[int] = []
    recorder, state = OpRecorder("op"), _counted()

    async def main() -> None:
        sessions: list[Session] = [_Callback(starts, 0.002) for _ in range(2)]
        driver = ArrivalDriver(_slots(sessions, recorder), recorder, state, rate, None, 1.0)
        state.allow(200)
        task = asyncio.create_task(driver.run(time.perf_counter_ns()))
        await _until_spent(state, lambda: driver.pending)
        await asyncio.sleep(0.02)
        state.stop()
        await task

    _run(main)
    assert len(starts) == 200
    assert recorder.flush().ok == 200


def test_failed_reopens_take_from_the_count_in_the_closed_model() -> None:
    recorder, state = OpRecorder("op"), _counted()
    plugin = _Refusing()

    async def main() -> None:
        slot = Slot(plugin, _ctx(), recorder)
        driver = ClosedDriver([slot], recorder, state)
        state.allow(3)
        driver.start()
        await asyncio.wait_for(state.spent.wait(), 5.0)
        state.stop()

    _run(main)
    assert plugin.opens == 3


def test_no_count_never_spends() -> None:
    starts: list[int] = []
    recorder, state = OpRecorder("op"), RunState()

    async def main() -> None:
        driver = ClosedDriver(_slots([_Callback(starts, 0.0005)], recorder), recorder, state)
        driver.start()
        await asyncio.sleep(0.05)
        state.stop()

    _run(main)
    assert not state.spent.is_set()
    assert len(starts) > 10
    assert state.left == -1  # a run without a count takes nothing on its hot path


@pytest.mark.parametrize(
    ("total", "weights"),
    [(1000, [3, 3, 2]), (7, [1, 1, 1]), (1, [5, 5]), (10**12, [1, 2, 3, 4]), (5, [1])],
)
def test_a_count_is_split_in_whole_exchanges_that_add_up(total: int, weights: list[int]) -> None:
    shares = apportion(total, weights)
    assert sum(shares) == total
    for share, weight in zip(shares, weights, strict=True):
        assert abs(share - total * weight / sum(weights)) < 1


def test_every_worker_gets_its_share_of_the_count() -> None:
    plan = resolve(loader.load("http-get"), Overrides(requests=1001, processes=4, connections=10))
    slices = worker_slices(plan)
    assert [s.requests for s in slices] == [301, 300, 200, 200]
    again = [type(s).from_dict(s.to_dict()) for s in slices]
    assert [s.requests for s in again] == [301, 300, 200, 200]


def test_a_count_given_as_a_flag_runs_without_the_profiles_warmup_and_time_limit() -> None:
    plan = resolve(loader.load("http-get"), Overrides(requests=100))
    assert (plan.warmup, plan.duration) == (0.0, NO_TIME_LIMIT)
    capped = resolve(loader.load("http-get"), Overrides(requests=100, duration=3.0, warmup=1.0))
    assert (capped.warmup, capped.duration) == (1.0, 3.0)
    assert resolve(loader.load("http-get"), Overrides()).warmup == 2.0


def test_a_profiles_count_keeps_the_profiles_own_limits(tmp_path: Path) -> None:
    head = 'name = "n"\nprotocol = "http"\nrequests = 50\n'
    group = '[[group]]\nop = "request"\n'
    bare, limited = tmp_path / "bare.toml", tmp_path / "limited.toml"
    bare.write_text(head + group)
    limited.write_text(head + 'warmup = "1s"\nduration = "4s"\n' + group)
    plan = resolve(loader.load(str(bare)), Overrides())
    assert (plan.requests, plan.warmup, plan.duration) == (50, 0.0, NO_TIME_LIMIT)
    plan = resolve(loader.load(str(limited)), Overrides())
    assert (plan.warmup, plan.duration) == (1.0, 4.0)
    plan = resolve(loader.load(str(limited)), Overrides(requests=9))  # the flag's rule
    assert (plan.requests, plan.warmup, plan.duration) == (9, 0.0, NO_TIME_LIMIT)


def test_a_ramp_needs_a_duration_with_a_count() -> None:
    with pytest.raises(loader.ProfileError, match="a ramp needs a duration"):
        resolve(loader.load("http-get"), Overrides(requests=10, rate=100.0, ramp_to=200.0))
