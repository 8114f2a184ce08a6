"""The subscriber's receive path in memory: a connection fed bytes, counted per read.

The counters a :class:`SubscribeSession` keeps per read must be those of the
per-message reference (:meth:`SequenceTracker.observe` for every stamped
message), however the bytes are cut, and the acknowledgements it writes those
the protocol asks for.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, cast

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.mqtt.client import MqttConnection
from protobench.protocols.mqtt.codec import PUBREL, V5, V311, Ack, Publish, encode
from protobench.protocols.mqtt.endboard import EndBoard, end_copy, topic_matches
from protobench.protocols.mqtt.payload import HEADER_SIZE, SequenceTracker, end_marker, stamp
from protobench.protocols.mqtt.sessions import SubscribeSession
from protobench.vocab.errors import OpError

pytestmark = pytest.mark.anyio


class Wire:
    """A transport that keeps what is written."""

    def __init__(self) -> None:
        self.written = bytearray()

    def write(self, data: bytes) -> None:
        self.written += data

    def get_extra_info(self, name: str) -> Any:
        return None

    def abort(self) -> None:
        return None


def message(publisher: int, seq: int, size: int = 40) -> bytes:
    return stamp(publisher, seq, 1_000) + bytes(size - HEADER_SIZE)


# (publisher, seq): in order, a gap, a late arrival, a duplicate, a new publisher mid-stream
SEQUENCE = [(1, 0), (1, 1), (2, 5), (1, 4), (1, 2), (2, 6), (1, 2), (2, 6), (1, 5), (3, 9)]


def stream(version: int) -> tuple[bytes, list[bytes]]:
    """Broker bytes mixing QoS 0 and 1, foreign payloads and a QoS 2 message; the payloads."""
    packets: list[Publish] = []
    for i, (publisher, seq) in enumerate(SEQUENCE):
        packets.append(
            Publish(f"t/{publisher}", message(publisher, seq), qos=i % 2, packet_id=i + 1)
        )
    packets.insert(3, Publish("t/x", b"short"))
    packets.insert(6, Publish("t/x", b"\x00" * 30, qos=1, packet_id=99))
    packets.append(Publish("t/q2", message(4, 0), qos=2, packet_id=7))
    payloads = [p.payload for p in packets]
    return b"".join(encode(p, version) for p in packets), payloads


def reference(payloads: list[bytes]) -> Counter[str]:
    counters: Counter[str] = Counter()
    tracker = SequenceTracker()
    for payload in payloads:
        if len(payload) < HEADER_SIZE or payload[:2] != b"PB":
            counters["foreign"] += 1
            continue
        publisher, seq = int.from_bytes(payload[4:8]), int.from_bytes(payload[8:12])
        if payload[2:4] != b"\0\0":
            counters["expected"] += tracker.end(publisher, seq, counters)
            continue
        counters["received"] += 1
        counters["expected"] += tracker.observe(publisher, seq, counters)
    counters["unfinished"] += tracker.unfinished
    return +counters


async def receive(version: int, chunks: list[bytes]) -> tuple[OpRecorder, bytes]:
    conn = MqttConnection(version)
    wire = Wire()
    conn.connection_made(cast(asyncio.Transport, wire))
    session = SubscribeSession(conn, shared=False)
    recorder = OpRecorder("subscribe")
    task = asyncio.create_task(session.run(recorder))
    await asyncio.sleep(0)
    for chunk in chunks:
        conn.data_received(chunk)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return recorder, bytes(wire.written)


@pytest.mark.parametrize("version", [V311, V5])
async def test_counters_match_the_per_message_reference_however_cut(version: int) -> None:
    data, payloads = stream(version)
    want = reference(payloads)
    assert want == Counter(
        received=11, foreign=2, lost=1, out_of_order=1, duplicated=2, expected=10, unfinished=4
    )
    whole, acks = await receive(version, [data])
    dribbled, acks_dribbled = await receive(version, [data[i : i + 1] for i in range(len(data))])
    for recorder in (whole, dribbled):
        assert recorder.counters == want
        assert len(recorder.latencies) == 11
        assert recorder.bytes_in == 11 * 40
    assert min(whole.latencies) > 0
    puback_ids = [i + 1 for i in range(len(SEQUENCE)) if i % 2] + [99]
    want_acks = [bytes((0x40, 2, 0, pid)) for pid in puback_ids] + [bytes((0x50, 2, 0, 7))]
    assert packets_of(acks) == packets_of(acks_dribbled) == sorted(want_acks)


def packets_of(written: bytes) -> list[bytes]:
    """The 4-byte acknowledgements written, sorted (their order across a read is free)."""
    return sorted(written[i : i + 4] for i in range(0, len(written), 4))


async def test_qos2_duplicates_are_dropped_until_pubrel() -> None:
    first = encode(Publish("t", message(5, 0), qos=2, packet_id=3))
    again = encode(Publish("t", message(5, 0), qos=2, packet_id=3, dup=True))
    release = encode(Ack(PUBREL, 3))
    recorder, written = await receive(V311, [first + again, release + first])
    assert recorder.counters == Counter(received=2, duplicated=1, expected=1, unfinished=1)
    assert written == bytes.fromhex("50020003 50020003 70020003 50020003")


async def test_malformed_bytes_fail_the_connection_and_count_nothing() -> None:
    conn = MqttConnection(V311)
    conn.connection_made(cast(asyncio.Transport, Wire()))
    session = SubscribeSession(conn, shared=False)
    recorder = OpRecorder("subscribe")
    task = asyncio.create_task(session.run(recorder))
    await asyncio.sleep(0)
    conn.data_received(encode(Publish("t", message(1, 0))) + bytes.fromhex("3004 0002 fffe"))
    conn.connection_lost(None)
    with pytest.raises(OpError, match="UTF-8"):
        await task
    assert recorder.counters == Counter(disconnects=1)


async def test_end_markers_count_the_tail_that_never_came_as_undelivered() -> None:
    # publisher 1 sent 6 (0..5) of which 0, 1, 3 came; publisher 2 sent 2, all came;
    # publisher 3 sent 4 and none came; publisher 4 never ended.
    parts = [message(1, 0), message(1, 1), message(1, 3), message(2, 0), message(2, 1)]
    parts += [end_marker(1, 6, 5), end_marker(2, 2, 5), end_marker(3, 4, 5), message(4, 0)]
    data = b"".join(encode(Publish("t", payload), V311) for payload in parts)
    recorder, _ = await receive(V311, [data])
    assert recorder.counters == Counter(
        received=6, lost=1, undelivered=2 + 4, expected=6 + 2 + 4 + 1, unfinished=1
    )
    assert recorder.counters == reference(parts)
    assert len(recorder.latencies) == 6  # markers are not messages


async def test_a_subscriber_is_settled_when_every_publisher_heard_has_ended() -> None:
    conn = MqttConnection(V311)
    conn.connection_made(cast(asyncio.Transport, Wire()))
    session = SubscribeSession(conn, shared=False)
    task = asyncio.create_task(session.run(OpRecorder("subscribe")))
    await asyncio.sleep(0)
    conn.data_received(encode(Publish("t", message(1, 0))) + encode(Publish("t", message(2, 0))))
    assert not session.settled()  # messages just came, two publishers still going
    conn.data_received(encode(Publish("t", end_marker(1, 1, 5))))
    assert not session.settled()
    conn.data_received(encode(Publish("t", end_marker(2, 3, 5))))
    assert session.settled()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_topic_filters_match_as_mqtt_says() -> None:
    assert topic_matches("a/+/c", "a/b/c")
    assert topic_matches("a/#", "a")
    assert topic_matches("a/#", "a/b/c")
    assert topic_matches("#", "x/y")
    assert topic_matches("$share/g/a/+", "a/b")
    assert not topic_matches("a/+", "a/b/c")
    assert not topic_matches("a/b", "a")
    assert not topic_matches("#", "$SYS/x")
    assert not topic_matches("protobench/#", "other/x")


async def test_a_backlogged_subscriber_owes_the_tail_the_board_tells_of() -> None:
    # The markers never came in line (a backlog), but the board heard every publisher's end.
    conn = MqttConnection(V311)
    conn.connection_made(cast(asyncio.Transport, Wire()))
    board = EndBoard(MqttConnection(V311))
    session = SubscribeSession(conn, False, board=board, filters=("t/#",))
    recorder = OpRecorder("subscribe")
    task = asyncio.create_task(session.run(recorder))
    await asyncio.sleep(0)
    conn.data_received(b"".join(encode(Publish("t/1", message(1, seq))) for seq in range(3)))
    copies = [end_copy(end_marker(1, 10, 5), "t/1"), end_copy(end_marker(2, 4, 5), "t/2")]
    copies.append(end_copy(end_marker(3, 7, 5), "elsewhere/3"))  # not ours to receive
    board.conn.data_received(b"".join(encode(Publish("protobench-end/x", c)) for c in copies))
    assert not session.settled()  # 7 of publisher 1's messages are still owed
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    lag = {key: recorder.counters.pop(key) for key in ("lagging", "lag_ms")}
    assert recorder.counters == Counter(received=3, expected=10 + 4, undelivered=7 + 4)
    # it was behind: the newest message it got (stamped at 1 µs) is as old as the clock
    assert lag["lagging"] == 1
    assert lag["lag_ms"] >= (time.monotonic_ns() - 1_000) // 1_000_000 - 60_000


async def test_messages_that_come_before_the_run_starts_are_counted_when_it_does() -> None:
    # A publisher in another worker process may start a few milliseconds sooner.
    conn = MqttConnection(V311)
    conn.connection_made(cast(asyncio.Transport, Wire()))
    session = SubscribeSession(conn, shared=False)
    conn.data_received(b"".join(encode(Publish("t", message(1, seq))) for seq in range(3)))
    recorder = OpRecorder("subscribe")
    task = asyncio.create_task(session.run(recorder))
    await asyncio.sleep(0)
    conn.data_received(encode(Publish("t", message(1, 3))))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.counters == Counter(received=4, expected=4, unfinished=1)
