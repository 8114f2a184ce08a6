"""The keepalive wheel: every connection gets one turn per period from one shared timer,
pings when idle, gives up without PINGRESP, and an idle connection stays small."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from protobench.protocols.mqtt.client import MqttConnection
from protobench.protocols.mqtt.codec import V311
from protobench.protocols.mqtt.keepalive import SLOTS, wheel
from protobench.vocab.errors import ErrorClass
from tests.support.timing import MS, S, eventually

pytestmark = pytest.mark.anyio


class Counted:
    def __init__(self, turns: int) -> None:
        self.turns = 0
        self.left = turns

    def keepalive_tick(self) -> bool:
        self.turns += 1
        return self.turns < self.left


class Wire:
    """A transport that keeps what is written."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.written += data

    def get_extra_info(self, name: str) -> Any:
        return None

    def abort(self) -> None:
        self.aborted = True


async def test_each_connection_gets_one_turn_per_period_and_leaves_when_done() -> None:
    period = 100 * MS
    shared = wheel(period)
    assert wheel(period) is shared
    forever = [Counted(10**9) for _ in range(200)]
    once = [Counted(1) for _ in range(50)]
    for conn in forever + once:
        shared.add(conn)
    # three turns each, however late the loop's wake-ups (the wheel and this wait share the
    # loop: a connection given two turns in one period would have five by then)
    await eventually(lambda: all(c.turns >= 3 for c in forever), 10 * S, "three turns each")
    assert all(c.turns <= 4 for c in forever)
    assert all(c.turns == 1 for c in once)
    assert shared.size == 200
    assert sum(len(bucket) for bucket in shared.buckets) == 200
    assert len(shared.buckets) == SLOTS


async def test_a_wheel_with_no_connection_left_stops_its_timer() -> None:
    shared = wheel(0.05)
    shared.add(Counted(1))
    await eventually(lambda: shared.handle is None, 5 * S, "the wheel's timer stopped")
    assert shared.size == 0
    assert shared.handle is None


async def test_an_idle_connection_pings_then_gives_up_without_pingresp() -> None:
    conn = MqttConnection(V311)
    wire = Wire()
    conn.connection_made(cast(asyncio.Transport, wire))
    conn.send(b"\x10\x00")  # stands for CONNECT: sent this period
    assert conn.keepalive_tick()
    await asyncio.sleep(0)
    assert bytes(wire.written) == b"\x10\x00"
    assert conn.keepalive_tick()  # nothing sent since: PINGREQ
    await asyncio.sleep(0)
    assert bytes(wire.written).endswith(b"\xc0\x00")
    assert not conn.keepalive_tick()  # no PINGRESP came
    assert wire.aborted
    assert conn.error is not None
    assert conn.error.error_class is ErrorClass.TIMEOUT


async def test_an_idle_connection_has_no_instance_dict_nor_queues_until_used() -> None:
    conn = MqttConnection(V311)
    assert not hasattr(conn, "__dict__")
    assert conn.waiting is None
    assert conn.resume_waiters is None
    conn.connection_made(cast(asyncio.Transport, Wire()))
    conn.data_received(b"\x20\x02\x00\x00")  # CONNACK
    decoder = conn.decoder
    assert decoder.messages == []
    assert decoder.messages is decoder.to_ack is decoder.acked  # one shared empty list
    conn.wait_window(lambda: None)
    assert conn.waiting is not None
    assert len(conn.waiting) == 1
