"""Slots and drivers under plugin faults, with fake sessions on a real event loop.

A session that never answers is counted as one ``timeout`` by the engine's
sweep for every kind of session and model, then abandoned and reopened; what
is still pending at the end is ``timeout`` or ``unfinished``. A plugin that
raises something other than ``OpError`` is a ``local`` error named by the
exception's type, and the session is reopened. Opens are counted
(``connects``, ``connect_failed``) and so is the time without a session
(``down_us``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, cast

import pytest
import uvloop

from protobench.engine import schedule
from protobench.engine.metrics import OpRecorder
from protobench.engine.schedule import (
    ArrivalDriver,
    ClosedDriver,
    ExchangeDriver,
    RunState,
    Slot,
)
from protobench.protocols.base import (
    AsyncSession,
    CallbackSession,
    Done,
    ProtocolPlugin,
    Session,
    SessionContext,
)
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.timing import MS, S, eventually

TIMEOUT = 0.1


class _SilentCallback(CallbackSession):
    """Never calls ``done`` unless told to (``finish``)."""

    def __init__(self) -> None:
        self.pending: list[Done] = []
        self.closed = False

    def submit(self, done: Done) -> None:
        self.pending.append(done)

    def finish(self) -> None:
        for done in self.pending:
            done(None, 10)
        self.pending.clear()

    async def close(self) -> None:
        self.closed = True


class _SilentAsync(AsyncSession):
    def __init__(self) -> None:
        self.closed = False

    async def call(self) -> int:
        await asyncio.Event().wait()
        return 0

    async def close(self) -> None:
        self.closed = True


class _RaisingCallback(CallbackSession):
    """Each exchange raises a plugin bug."""

    def submit(self, done: Done) -> None:
        raise KeyError("bug in submit")

    async def close(self) -> None:
        return None


class _RaisingAsync(AsyncSession):
    async def call(self) -> int:
        raise KeyError("bug in call")

    async def close(self) -> None:
        return None


class _Plugin(ProtocolPlugin):
    """Opens sessions made by ``factory``; each open may fail first (``fail_opens``)."""

    name: ClassVar[str] = "fake"
    operations: ClassVar[dict[str, Any]] = {}

    def __init__(self, factory: Callable[[], Session], fail_opens: int = 0) -> None:
        self.factory = factory
        self.fail_opens = fail_opens
        self.opens = 0

    async def open_session(self, ctx: SessionContext) -> Session:
        self.opens += 1
        if self.opens <= self.fail_opens:
            raise FileNotFoundError("ca_file missing.pem")
        return self.factory()


def _ctx() -> SessionContext:
    return SessionContext(
        target="fake://", group="g", op="op", index=0, worker=0,
        params=cast(Any, None), options=cast(Any, None), timeout=TIMEOUT,
    )  # fmt: skip


def _slots(plugin: ProtocolPlugin, recorder: OpRecorder, n: int) -> list[Slot]:
    return [Slot(plugin, _ctx(), recorder) for _ in range(n)]


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    uvloop.run(asyncio.wait_for(main(), 10 * S))


async def _sweep_for(driver: ExchangeDriver, seconds: float) -> None:
    """Sweep every 20 ms for ``seconds`` (what the worker's tick does)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(0.02)
        driver.sweep(time.perf_counter_ns(), TIMEOUT)


def _driver(kind: str, slots: list[Slot], recorder: OpRecorder, state: RunState) -> ExchangeDriver:
    if kind == "closed":
        return ClosedDriver(slots, recorder, state)
    return ArrivalDriver(slots, recorder, state, 200.0, None, 1.0)


async def _start(driver: ExchangeDriver) -> asyncio.Task[None] | None:
    if isinstance(driver, ClosedDriver):
        driver.start()
        return None
    assert isinstance(driver, ArrivalDriver)
    return asyncio.create_task(driver.run(time.perf_counter_ns()))


async def _open_all(slots: list[Slot]) -> None:
    for slot in slots:
        await slot.open()


@pytest.mark.parametrize("model", ["closed", "open"])
@pytest.mark.parametrize("session", [_SilentCallback, _SilentAsync])
def test_a_silent_session_times_out_once_then_is_abandoned_and_reopened(
    model: str, session: Callable[[], Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schedule, "ABANDON_AFTER", 0.2)
    recorder, state = OpRecorder("op"), RunState()
    plugin = _Plugin(session)
    slots = _slots(plugin, recorder, 2)

    async def main() -> None:
        await _open_all(slots)
        driver = _driver(model, slots, recorder, state)
        task = await _start(driver)
        await _sweep_for(driver, TIMEOUT + 0.5)  # past the timeout and the abandon grace
        state.stop()
        if task is not None:
            await task
        for slot in slots:
            await slot.close()

    _run(main)
    item = recorder.flush()
    assert item.ok == 0
    timeouts = item.errors.get("timeout", 0)
    assert timeouts >= 2, item.errors  # each slot's first exchange, at least
    assert plugin.opens > 2  # abandoned sessions were reopened
    assert plugin.opens - 2 <= item.counters["reconnects"] <= plugin.opens  # the last may not be
    assert item.counters["connects"] == plugin.opens


def test_an_exchange_counted_as_timeout_is_not_counted_again_when_it_ends() -> None:
    recorder, state = OpRecorder("op"), RunState()
    sessions: list[_SilentCallback] = []

    def make() -> Session:
        sessions.append(_SilentCallback())
        return sessions[-1]

    slots = _slots(_Plugin(make), recorder, 1)

    async def main() -> None:
        await _open_all(slots)
        driver = ClosedDriver(slots, recorder, state)
        driver.start()
        await asyncio.sleep(TIMEOUT * 2)
        driver.sweep(time.perf_counter_ns(), TIMEOUT)
        assert recorder.errors["timeout"] == 1
        state.pause()
        sessions[0].finish()  # the late reply: neither ok nor a second error
        assert driver.inflight == 0
        state.stop()

    _run(main)
    item = recorder.flush()
    assert item.ok == 0
    assert item.errors == {"timeout": 1}


@pytest.mark.parametrize("age", [0.0, TIMEOUT * 2])
def test_what_is_pending_at_the_end_is_a_timeout_or_unfinished(age: float) -> None:
    recorder, state = OpRecorder("op"), RunState()
    slots = _slots(_Plugin(_SilentCallback), recorder, 3)

    async def main() -> None:
        await _open_all(slots)
        driver = ClosedDriver(slots, recorder, state)
        driver.start()
        await asyncio.sleep(age)
        state.stop()
        driver.sweep(time.perf_counter_ns(), TIMEOUT, final=True)

    _run(main)
    item = recorder.flush()
    if age:
        assert item.errors == {"timeout": 3}
        assert "unfinished" not in item.counters
    else:
        assert item.errors == {}
        assert item.counters["unfinished"] == 3


def test_an_unexpected_exception_in_open_is_a_local_error_and_the_slot_retries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorder, state = OpRecorder("op"), RunState()
    plugin = _Plugin(_SilentCallback, fail_opens=3)
    slots = _slots(plugin, recorder, 1)

    async def main() -> None:
        assert not await slots[0].open()
        driver = ClosedDriver(slots, recorder, state)
        driver.start()  # reopens with backoff: 0.1 s, 0.2 s, then it opens
        for _ in range(100):
            if slots[0].session is not None:
                break
            await asyncio.sleep(0.02)
        state.stop()

    _run(main)
    item = recorder.flush()
    assert item.errors == {"local": 3}
    assert item.error_codes == {"local:FileNotFoundError": 3}
    assert "ca_file missing.pem" in item.last_errors["local"]
    assert item.counters["connect_failed"] == 3
    assert item.counters["connects"] == 1
    assert item.counters["down_us"] > 0
    log = capsys.readouterr().err
    assert log.count("Traceback") == 1  # once per exception type
    assert "FileNotFoundError" in log


@pytest.mark.parametrize("model", ["closed", "open"])
@pytest.mark.parametrize("session", [_RaisingCallback, _RaisingAsync])
def test_an_unexpected_exception_in_an_exchange_is_local_and_reopens(
    model: str, session: Callable[[], Session]
) -> None:
    recorder, state = OpRecorder("op"), RunState()
    plugin = _Plugin(session)
    slots = _slots(plugin, recorder, 1)

    async def main() -> None:
        await _open_all(slots)
        driver = _driver(model, slots, recorder, state)
        task = await _start(driver)
        await eventually(  # each failed exchange reopens after a backoff of 0.1 s, 0.2 s, ...
            lambda: recorder.errors["local"] >= 2 and recorder.counters["reconnects"] >= 2,
            10 * S,
            "two local errors and their reopens",
        )
        state.stop()
        if task is not None:
            await task
        assert driver.inflight == 0

    _run(main)
    item = recorder.flush()
    code = "local:KeyError"
    assert item.error_codes[code] == item.errors["local"] >= 2, item.errors
    assert item.counters["reconnects"] >= 2  # reopened after each
    assert item.counters["connects"] == plugin.opens >= 2


class _BrokenByProtocolError(CallbackSession):
    """A connection a protocol error ended: every exchange fails with the same error."""

    def __init__(self, lost: bool) -> None:
        self.error = OpError(ErrorClass.PROTOCOL, "frame length over max_size", lost=lost)
        self.exchanges = 0

    def submit(self, done: Done) -> None:
        self.exchanges += 1
        asyncio.get_running_loop().call_soon(done, self.error, 0)

    async def close(self) -> None:
        return None


@pytest.mark.parametrize("model", ["closed", "open"])
@pytest.mark.parametrize("lost", [False, True])
def test_an_error_that_ended_the_connection_reopens_the_session(model: str, lost: bool) -> None:
    """An error that ended the session's connection (``lost``) is that session's last: the
    engine reopens it (it used to be asked again and again, failing in a tight loop). A
    protocol error alone (a 503) keeps the session."""
    recorder, state = OpRecorder("op"), RunState()
    sessions: list[_BrokenByProtocolError] = []

    def make() -> Session:
        sessions.append(_BrokenByProtocolError(lost))
        return sessions[-1]

    slots = _slots(_Plugin(make), recorder, 1)

    async def main() -> None:
        await _open_all(slots)
        task = await _start(_driver(model, slots, recorder, state))
        await eventually(lambda: recorder.errors["protocol"] >= 5, 10 * S, "five errors")
        state.stop()
        if task is not None:
            await task

    _run(main)
    item = recorder.flush()
    errors = item.errors["protocol"]
    assert errors >= 5
    assert errors == sum(session.exchanges for session in sessions)
    if lost:
        assert max(session.exchanges for session in sessions) == 1
        assert errors <= item.counters["reconnects"] + 1
    else:
        assert len(sessions) == 1
        assert "reconnects" not in item.counters


def test_down_time_is_accrued_into_the_interval_it_falls_in() -> None:
    recorder = OpRecorder("op")
    slot = _slots(_Plugin(_SilentCallback, fail_opens=1000), recorder, 1)[0]

    async def main() -> None:
        t0 = slot.down_since = time.perf_counter_ns()
        await asyncio.sleep(0.05)
        t1 = time.perf_counter_ns()
        slot.accrue_down(t1)
        first = recorder.flush().counters
        await asyncio.sleep(100 * MS)
        t2 = time.perf_counter_ns()
        slot.accrue_down(t2)
        second = recorder.flush().counters
        assert first["down_us"] == (t1 - t0) // 1000
        assert second["down_us"] == (t2 - t1) // 1000

    _run(main)


def test_a_lost_session_is_down_until_it_reopens() -> None:
    recorder = OpRecorder("op")
    slot = _slots(_Plugin(_SilentCallback), recorder, 1)[0]

    async def main() -> None:
        assert await slot.open()
        assert slot.down_since == 0
        slot.drop()
        assert slot.down_since > 0
        await asyncio.sleep(0.05)
        assert await slot.open()
        assert slot.down_since == 0

    _run(main)
    counters = recorder.flush().counters
    assert counters["connects"] == 2
    assert counters["down_us"] >= 40_000
    assert "connect_failed" not in counters


def test_a_plugin_that_counts_its_own_connects_is_not_counted_twice() -> None:
    recorder = OpRecorder("op")

    class Counting(_Plugin):
        counts_connects: ClassVar[bool] = True

        async def open_session(self, ctx: SessionContext) -> Session:
            ctx.count("connects", 3)
            return await super().open_session(ctx)

    plugin = Counting(_SilentCallback)
    ctx = SessionContext(
        target="fake://", group="g", op="op", index=0, worker=0,
        params=cast(Any, None), options=cast(Any, None), timeout=TIMEOUT, count=recorder.count,
    )  # fmt: skip
    slot = Slot(plugin, ctx, recorder)
    assert uvloop.run(slot.open())
    assert recorder.flush().counters == {"connects": 3}


def test_open_errors_count_connect_failed() -> None:
    recorder = OpRecorder("op")

    class Refusing(_Plugin):
        async def open_session(self, ctx: SessionContext) -> Session:
            raise OpError(ErrorClass.REFUSED, "refused")

    slot = _slots(Refusing(_SilentCallback), recorder, 1)[0]
    assert not uvloop.run(slot.open())
    item = recorder.flush()
    assert item.errors == {"refused": 1}
    assert item.counters == {"connect_failed": 1}
