"""The engine times an exchange from the session's send stamp to the reply's receive stamp,
in every model and kind of session, and records its own delay in taking the reply up.

The sessions here are fakes that build a request for 3 ms, stamp its send, and complete
2 ms later with a receive stamp 1 ms after the send (what a stamped transport sets): the
latency must be exactly that 1 ms, never the building nor the engine's wake-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, ClassVar, cast

import pytest
import uvloop

from protobench.engine.metrics import OpRecorder, decode, summary
from protobench.engine.schedule import ArrivalDriver, ClosedDriver, RunState, Slot, exchange_times
from protobench.protocols.base import (
    AsyncSession,
    CallbackSession,
    Done,
    ProtocolPlugin,
    Session,
    SessionContext,
)
from protobench.protocols.timestamps.clock import Stamps

MS = 1_000_000
BUILD_NS = 3 * MS
WIRE_NS = 1 * MS


def _busy(ns: int) -> None:
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


class _Stamping(CallbackSession):
    """Builds for 3 ms, stamps the send, completes 2 ms later; the reply's stamp is the
    send + 1 ms (``receive``), or none, or one older than the send (``stale``)."""

    def __init__(self, stamps: Stamps, mode: str) -> None:
        self.stamps = stamps
        self.mode = mode
        self.due = 0

    def submit(self, done: Done) -> None:
        _busy(BUILD_NS)
        if self.mode != "silent":
            self.stamps.sent = time.perf_counter_ns()
        self.due = time.perf_counter_ns() + 2 * MS
        asyncio.get_running_loop().call_later(0.002, self._reply, done)

    def _reply(self, done: Done) -> None:
        if time.perf_counter_ns() < self.due:  # the loop's timers may fire up to 1 ms early
            asyncio.get_running_loop().call_soon(self._reply, done)
            return
        if self.mode == "receive":
            self.stamps.received = self.stamps.sent + WIRE_NS
        elif self.mode == "stale":
            self.stamps.received = self.stamps.sent - WIRE_NS
        done(None, 10)

    async def close(self) -> None:
        return None


class _StampingAsync(AsyncSession):
    def __init__(self, stamps: Stamps) -> None:
        self.stamps = stamps

    async def call(self) -> int:
        _busy(BUILD_NS)
        self.stamps.sent = time.perf_counter_ns()
        await asyncio.sleep(0.002)
        self.stamps.received = self.stamps.sent + WIRE_NS
        return 10

    async def close(self) -> None:
        return None


class _Plugin(ProtocolPlugin):
    name: ClassVar[str] = "fake"
    operations: ClassVar[dict[str, Any]] = {}

    def __init__(self, factory: Callable[[SessionContext], Session]) -> None:
        self.factory = factory

    async def open_session(self, ctx: SessionContext) -> Session:
        return self.factory(ctx)


def _ctx() -> SessionContext:
    return SessionContext(
        target="fake://", group="g", op="op", index=0, worker=0,
        params=cast(Any, None), options=cast(Any, None), timeout=5.0,
    )  # fmt: skip


def _run(model: str, factory: Callable[[SessionContext], Session]) -> OpRecorder:
    recorder, state = OpRecorder("op"), RunState()

    async def main() -> None:
        slot = Slot(_Plugin(factory), _ctx(), recorder)
        assert await slot.open()
        if model == "closed":
            ClosedDriver([slot], recorder, state).start()
            await asyncio.sleep(0.3)
            state.stop()
        else:
            driver = ArrivalDriver([slot], recorder, state, 50.0, None, 1.0)
            task = asyncio.create_task(driver.run(time.perf_counter_ns()))
            await asyncio.sleep(0.3)
            state.stop()
            await task
        await asyncio.sleep(0.05)

    uvloop.run(asyncio.wait_for(main(), 10))
    recorder.fold_pending()
    return recorder


def _figures(recorder: OpRecorder) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    item = recorder.flush()
    latency, uncorrected, delay = (
        summary(decode(encoded)) for encoded in (item.hist, item.hist_uncorrected, item.hist_delay)
    )
    return latency, uncorrected, delay


@pytest.mark.parametrize("model", ["closed", "open"])
def test_latency_runs_from_the_send_stamp_to_the_receive_stamp(model: str) -> None:
    latency, uncorrected, delay = _figures(
        _run(model, lambda ctx: _Stamping(ctx.stamps, "receive"))
    )
    assert latency["count"] >= 5
    if model == "closed":
        assert latency["min"] == latency["max"] == 1_000  # exactly the stamps' 1 ms
    else:  # from the intended time: the 3 ms of building is the generator's lateness
        assert uncorrected["min"] == uncorrected["max"] == 1_000
        assert latency["min"] >= 1_000 + BUILD_NS // 1_000
    assert delay["count"] == latency["count"]
    assert delay["min"] >= 1_000  # the reply was taken up 2 ms after the send, 1 ms late


@pytest.mark.parametrize("model", ["closed", "open"])
def test_without_a_receive_stamp_the_engine_s_time_ends_it_and_no_delay_is_measured(
    model: str,
) -> None:
    for mode in ("user", "stale"):
        latency, uncorrected, delay = _figures(
            _run(model, lambda ctx, mode=mode: _Stamping(ctx.stamps, mode))  # type: ignore[misc]
        )
        timed = uncorrected if model == "open" else latency
        assert timed["count"] >= 5
        assert timed["min"] >= 2_000  # the 2 ms to the completion, not a stale stamp
        assert timed["min"] < BUILD_NS // 1_000 + 2_000  # the building is not in it
        assert delay["count"] == 0


def test_a_session_that_stamps_nothing_is_timed_from_just_before_submit() -> None:
    (latency, _, delay) = _figures(_run("closed", lambda ctx: _Stamping(ctx.stamps, "silent")))
    assert latency["min"] >= (BUILD_NS + 2 * MS) // 1_000
    assert delay["count"] == 0


def test_an_awaitable_session_is_timed_by_its_stamps_too() -> None:
    latency, _, delay = _figures(_run("closed", lambda ctx: _StampingAsync(ctx.stamps)))
    assert latency["count"] >= 5
    assert latency["min"] == latency["max"] == 1_000
    assert delay["count"] == latency["count"]


def test_exchange_times_prefers_the_stamps_and_falls_back_to_the_engine() -> None:
    stamps = Stamps()
    assert exchange_times(stamps, 100, 500) == (100, 500, -1)
    stamps.sent, stamps.received = 200, 300
    assert exchange_times(stamps, 100, 500) == (200, 300, 200)
    stamps.received = 150  # the previous reply's
    assert exchange_times(stamps, 100, 500) == (200, 500, -1)
