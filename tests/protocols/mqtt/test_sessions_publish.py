"""The publisher's frames in memory: templates packed in place give the codec's bytes.

A :class:`PublishSession` builds each PUBLISH from a per-size template; every
frame must be exactly what :func:`encode` makes of the same message, stamped
with the publisher's id, its sequence number and the send time.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

import pytest

from protobench.protocols.base import SessionContext
from protobench.protocols.mqtt.client import MqttConnection
from protobench.protocols.mqtt.codec import PUBACK, V5, V311, Decoder, Publish, encode
from protobench.protocols.mqtt.endboard import EndBoard
from protobench.protocols.mqtt.options import MqttOptions, PublishParams
from protobench.protocols.mqtt.payload import END, HEADER, HEADER_SIZE, MAGIC, SENT
from protobench.protocols.mqtt.sessions import PublishSession

pytestmark = pytest.mark.anyio


def session(version: int, **params: object) -> PublishSession:
    checked = PublishParams.model_validate(params)
    ctx = SessionContext(
        "mqtt://127.0.0.1:1883", "pub", "publish", 3, 0, checked, MqttOptions(), 5.0
    )
    return PublishSession(MqttConnection(version), lambda: None, ctx, checked)


@pytest.mark.parametrize("version", [V311, V5])
@pytest.mark.parametrize("qos", [0, 1, 2])
@pytest.mark.parametrize(
    "params",
    [
        {"size": 20},
        {"size": 300, "retain": True, "topic": "t/{client}"},
        {"sizes": {20: 1, 200: 1}, "topic": "seq/{seq}"},
    ],
)
async def test_frames_are_the_codec_s_bytes(
    version: int, qos: int, params: dict[str, object]
) -> None:
    pub = session(version, qos=qos, **params)
    before = time.monotonic_ns()
    for seq, pid in enumerate((1, 2, 0xFFFF, 1)):
        frame, sent_at = pub._frame(pid if qos else 0)
        [packet] = Decoder(version).feed(frame)
        assert isinstance(packet, Publish)
        assert encode(packet, version) == frame
        assert packet.qos == qos
        assert packet.packet_id == (pid if qos else 0)
        assert packet.retain == bool(params.get("retain"))
        assert packet.topic == str(params.get("topic", "protobench/{client}")).format(
            client=3, seq=seq
        )
        magic, flags, publisher, got_seq, sent = HEADER.unpack_from(packet.payload)
        assert (magic, flags, publisher, got_seq) == (MAGIC, 0, pub.publisher, seq)
        assert before <= sent <= time.monotonic_ns()
        assert SENT.unpack_from(frame, sent_at) == (sent,)  # where the write sets it again
        assert packet.payload[HEADER_SIZE:] == bytes(len(packet.payload) - HEADER_SIZE)
        if "sizes" in params:
            assert len(packet.payload) == pub.mix.size_for(seq)  # type: ignore[union-attr]


async def test_tracked_publishes_take_free_packet_ids_and_complete_on_puback() -> None:
    pub = session(V311, qos=1, size=20)
    conn = pub.conn
    results: list[object] = []
    conn.inflight[2] = (lambda error, n: results.append(("other", error)), 1e18)
    for _ in range(3):
        pub._send_tracked(lambda error, n: results.append((error, n)))
    assert sorted(conn.inflight) == [1, 2, 3, 4]
    conn.data_received(bytes((PUBACK << 4, 2, 0, 3, PUBACK << 4, 2, 0, 1, PUBACK << 4, 2, 0, 9)))
    assert results == [(None, 4), (None, 4)]
    assert sorted(conn.inflight) == [2, 4]


class Wire:
    """A transport that keeps what is written."""

    def __init__(self) -> None:
        self.written = bytearray()

    def write(self, data: bytes) -> None:
        self.written += data

    def get_extra_info(self, name: str) -> object:
        return None


@pytest.mark.parametrize("qos", [0, 1])
async def test_the_end_marker_follows_every_message_and_its_copy_goes_to_the_board(
    qos: int,
) -> None:
    pub = session(V311, qos=qos, size=20)
    wire, board_wire = Wire(), Wire()
    pub.conn.connection_made(cast(asyncio.Transport, wire))
    pub.board = EndBoard(MqttConnection(V311))
    pub.board.conn.connection_made(cast(asyncio.Transport, board_wire))
    pub.conn.send_quota = 2  # the third QoS 1 publish waits for the window
    for _ in range(3):
        pub.submit(lambda error, n: None)
    pub.stopping()
    await asyncio.sleep(0)
    if qos:
        assert len(Decoder(V311).feed(bytes(wire.written))) == 2  # no marker before the third
        assert not board_wire.written
        pub.conn.data_received(bytes((PUBACK << 4, 2, 0, 1)))
        await asyncio.sleep(0)
    packets = Decoder(V311).feed(bytes(wire.written))
    stamps = [HEADER.unpack_from(p.payload) for p in packets if isinstance(p, Publish)]
    assert [(flags, seq) for _, flags, _, seq, _ in stamps] == [(0, 0), (0, 1), (0, 2), (END, 3)]
    assert {publisher for _, _, publisher, _, _ in stamps} == {pub.publisher}
    # the board's copy: QoS 1 on its own topic and connection, the marker then the data topic
    [copy] = Decoder(V311).feed(bytes(board_wire.written))
    assert isinstance(copy, Publish)
    assert (copy.topic, copy.qos) == (f"protobench-end/{pub.publisher:08x}", 1)
    assert copy.payload == packets[-1].payload + b"protobench/3"  # type: ignore[union-attr]


@pytest.mark.parametrize("qos", [0, 1])
async def test_mqtt5_properties_and_topic_aliases_are_the_codec_s_bytes(qos: int) -> None:
    """User properties, expiry, content type on every PUBLISH; with topic_alias the first
    one names the topic and sets alias 1, the next ones send an empty topic and the alias;
    past the broker's grant a topic goes by name."""
    pub = session(V5, qos=qos, size=64, topic="t/{seq}", topic_alias=True, message_expiry="1m",
                  user_properties={"k": "v"}, content_type="a/b")  # fmt: skip
    pub.fixed_topic = "t/a"  # one topic (as a template without {seq} makes it)
    pub.conn.alias_max = 1
    counted: dict[str, int] = {}
    pub._count = lambda name, n: counted.update({name: counted.get(name, 0) + n})
    framed = [pub._frame(pid if qos else 0) for pid in (1, 2, 3)]
    pub.fixed_topic = None  # another topic each: no alias left (the grant is 1)
    framed.append(pub._frame(4 if qos else 0))
    frames = [frame for frame, _ in framed]
    packets = [Decoder(V5).feed(frame)[0] for frame in frames]
    assert all(isinstance(p, Publish) for p in packets)
    for frame, packet in zip(frames, packets, strict=True):
        assert encode(packet, V5) == frame  # type: ignore[arg-type]
    assert [p.topic for p in packets] == ["t/a", "", "", "t/3"]  # type: ignore[union-attr]
    base = ((0x02, 60), (0x03, "a/b"), (0x26, ("k", "v")))
    assert [p.properties for p in packets] == [  # type: ignore[union-attr]
        (*base, (0x23, 1)), (*base, (0x23, 1)), (*base, (0x23, 1)), base,
    ]  # fmt: skip
    stamps = [HEADER.unpack_from(p.payload) for p in packets]  # type: ignore[union-attr]
    assert [stamp[3] for stamp in stamps] == [0, 1, 2, 3]
    assert [SENT.unpack_from(frame, at)[0] for frame, at in framed] == [s[4] for s in stamps]
    assert counted == {"topic_aliases": 1}
