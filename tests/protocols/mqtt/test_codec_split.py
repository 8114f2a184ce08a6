"""The decoder's fast path (:meth:`Decoder.split`) against its general path (``feed``).

``split`` must accept and reject exactly what ``feed`` does, and give the same
information: payloads and packet identifiers of the messages it leaves
unbuilt, the other packets as objects, in whatever pieces the bytes arrive.
"""

from __future__ import annotations

import random

import pytest

from protobench.protocols.mqtt.codec import (
    PUBACK,
    PUBCOMP,
    PUBREC,
    TOPICS_REMEMBERED,
    V5,
    V311,
    Ack,
    Connack,
    Decoder,
    MalformedPacket,
    Packet,
    PingResp,
    Prop,
    Publish,
    Suback,
    encode,
)
from tests.support.mqtt_bytes import h

type Split = tuple[list[bytes], list[int], list[int], list[Packet]]


def split_all(decoder: Decoder, chunks: list[bytes]) -> Split:
    """Payloads, packet ids to acknowledge, PUBACKed ids and packets over every chunk."""
    payloads: list[bytes] = []
    to_ack: list[int] = []
    acked: list[int] = []
    packets: list[Packet] = []
    for chunk in chunks:
        packets += decoder.split(chunk)
        spans = decoder.messages
        payloads += [decoder.data[spans[i] : spans[i + 1]] for i in range(0, len(spans), 2)]
        to_ack += decoder.to_ack
        acked += decoder.acked
    return payloads, to_ack, acked, packets


def expected(packets: list[Packet], version: int) -> Split:
    """What ``split`` should make of the packets ``feed`` returns."""
    payloads: list[bytes] = []
    to_ack: list[int] = []
    acked: list[int] = []
    rest: list[Packet] = []
    for packet in packets:
        if (
            isinstance(packet, Publish)
            and (packet.qos == 0 or (packet.qos == 1 and packet.packet_id))
            and not (version == V5 and packet.properties)
        ):
            payloads.append(packet.payload)
            if packet.qos:
                to_ack.append(packet.packet_id)
        elif (
            isinstance(packet, Ack)
            and packet.kind == PUBACK
            and not packet.reason
            and not packet.properties
        ):
            acked.append(packet.packet_id)
        else:
            rest.append(packet)
    return payloads, to_ack, acked, rest


def mixed(version: int) -> list[Packet]:
    props = ((Prop.MESSAGE_EXPIRY_INTERVAL, 60),) if version == V5 else ()
    return [
        Publish("a/b", b"hello"),
        Publish("a/b", b"", qos=1, packet_id=7),
        Publish("t", b"x" * 300, qos=1, packet_id=0x1234, retain=True, dup=True),
        Ack(PUBACK, 9),
        Publish("caf\u00e9/\u2603", b"unicode topic"),
        Publish("q2", b"exactly once", qos=2, packet_id=3),
        Publish("q1-id0", b"no id", qos=1, packet_id=0),
        Publish("props", b"with properties", properties=props),
        Ack(PUBREC, 4),
        Ack(PUBCOMP, 5),
        Connack(reason=0),
        PingResp(),
        Suback(2, (0, 1)),
        Publish("", b"empty topic"),
        Publish("big", bytes(range(256)) * 100, qos=1, packet_id=65535),
        Ack(PUBACK, 10, reason=0x10 if version == V5 else 0),
    ]


@pytest.mark.parametrize("version", [V311, V5])
def test_split_in_one_chunk_matches_feed(version: int) -> None:
    stream = b"".join(encode(p, version) for p in mixed(version))
    reference = Decoder(version).feed(stream)
    assert reference == mixed(version)
    got = split_all(Decoder(version), [stream])
    assert got == expected(reference, version)
    assert got[0][0] == b"hello"
    assert got[1] == [7, 0x1234, 65535]


@pytest.mark.parametrize("version", [V311, V5])
def test_split_byte_by_byte_and_at_random_cuts(version: int) -> None:
    stream = b"".join(encode(p, version) for p in mixed(version))
    want = expected(mixed(version), version)
    decoder = Decoder(version)
    assert split_all(decoder, [stream[i : i + 1] for i in range(len(stream))]) == want
    assert decoder.buffered == 0
    rng = random.Random(6)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(stream)), 6))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        assert split_all(Decoder(version), chunks) == want


def test_split_offsets_are_into_data_with_the_held_back_start() -> None:
    frame = encode(Publish("bench/1", b"0123456789", qos=1, packet_id=2))
    decoder = Decoder(V311)
    assert decoder.split(frame[:5]) == []
    assert decoder.messages == []
    assert decoder.buffered == 5
    assert decoder.split(frame[5:] + frame) == []
    assert decoder.data == frame + frame
    assert decoder.messages == [13, 23, 36, 46]
    assert decoder.to_ack == [2, 2]


def test_split_of_a_publish_byte_for_byte() -> None:
    decoder = Decoder(V5)
    assert decoder.split(h("32 0a 00 03 61 2f 62 00 05 00 68 69")) == []
    assert decoder.messages == [10, 12]
    assert decoder.to_ack == [5]
    assert decoder.data[10:12] == b"hi"
    assert decoder.split(h("40 02 00 05 40 03 00 06 10")) == [Ack(PUBACK, 6, 0x10)]
    assert decoder.acked == [5]
    assert decoder.messages == []


@pytest.mark.parametrize(
    ("version", "wire", "message"),
    [
        (V311, "30 04 00 02 ff fe", "UTF-8"),
        (V311, "32 06 00 02 c3 28 00 01", "UTF-8"),
        (V5, "30 05 00 02 ff fe 00", "UTF-8"),
        (V311, "30 05 00 09 61 62 63", "shorter"),
        (V311, "32 04 00 01 61 00", "shorter"),  # no room for the packet id
        (V311, "30 01 00", "shorter"),
        (V5, "30 03 00 01 61", "shorter"),  # no property block
        (V5, "30 05 00 01 61 05 01", "shorter"),  # property block longer than the packet
        (V5, "30 06 00 01 61 03 01 01", "shorter"),
        (V5, "30 05 00 01 61 01 7f", "unknown property"),
        (V311, "36 02 00 00", "QoS 3"),
        (V311, "40 03 00 0a 10", "trailing"),
        (V311, "41 02 00 0a", "reserved flags"),
        (V311, "30 ff ff ff ff 7f", "longer than 4"),
        (V311, "f0 00", "unsupported packet type"),
    ],
)
def test_split_rejects_what_feed_rejects(version: int, wire: str, message: str) -> None:
    with pytest.raises(MalformedPacket, match=message):
        Decoder(version).feed(h(wire))
    with pytest.raises(MalformedPacket, match=message):
        Decoder(version).split(h(wire))
    stream = encode(Publish("a", b"ok"), version) + h(wire)
    pieces = [stream[i : i + 1] for i in range(len(stream))]  # after a good packet, byte by byte
    with pytest.raises(MalformedPacket, match=message):
        split_all(Decoder(version), pieces)


def test_size_limit_applies_to_short_lengths_too() -> None:  # the fixed header counts
    with pytest.raises(MalformedPacket, match="packet of 13 B over the maximum packet size of 10"):
        Decoder(V311, max_size=10).split(h("30 0b"))
    with pytest.raises(MalformedPacket, match="packet of 131 B over the maximum packet size"):
        Decoder(V311, max_size=100).split(h("30 80 01"))


def test_a_remembered_topic_does_not_let_invalid_bytes_through() -> None:
    decoder = Decoder(V311)
    decoder.split(encode(Publish("ab", b"1")))
    with pytest.raises(MalformedPacket, match="UTF-8"):
        decoder.split(h("30 05 00 02 61 ff 31"))
    decoder = Decoder(V311)
    topics = [f"t/{i}" for i in range(TOPICS_REMEMBERED + 5)]
    stream = b"".join(encode(Publish(t, t.encode())) for t in topics * 2)
    assert split_all(decoder, [stream])[0] == [t.encode() for t in topics * 2]
    with pytest.raises(MalformedPacket, match="UTF-8"):
        decoder.split(h("30 06 00 03 74 2f ff 31"))
