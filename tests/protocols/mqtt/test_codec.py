"""The MQTT codec, byte for byte against frames checked by hand against the specs.

References: MQTT 3.1.1 (OASIS, 2014) sections 2.2.3 (remaining length
examples), 3.1-3.14; MQTT 5.0 (OASIS, 2019) sections 2.2.2 (properties),
3.1-3.14 (reason codes may be omitted when 0 and there are no properties).
"""

from __future__ import annotations

import pytest

from protobench.protocols.mqtt.codec import (
    PUBACK,
    PUBCOMP,
    PUBREC,
    PUBREL,
    V5,
    V311,
    Ack,
    Connack,
    Connect,
    Decoder,
    Disconnect,
    MalformedPacket,
    Packet,
    PacketTooLarge,
    PingReq,
    PingResp,
    Prop,
    Publish,
    Reason,
    Suback,
    Subscribe,
    Unsuback,
    Unsubscribe,
    connack_text,
    encode,
    encode_properties,
    encode_varint,
    publish_prefix,
    reason_text,
)
from tests.support.mqtt_bytes import h


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (0, "00"),
        (127, "7f"),
        (128, "80 01"),
        (16_383, "ff 7f"),
        (16_384, "80 80 01"),
        (2_097_151, "ff ff 7f"),
        (2_097_152, "80 80 80 01"),
        (268_435_455, "ff ff ff 7f"),
    ],
)
def test_varint_matches_the_spec_table(value: int, wire: str) -> None:
    assert encode_varint(value) == h(wire)


def test_varint_out_of_range() -> None:
    with pytest.raises(ValueError, match="out of range"):
        encode_varint(268_435_456)


# (packet, version, hand-checked bytes)
FRAMES: list[tuple[Packet, int, str]] = [
    # CONNECT: "MQTT", level 4, clean session, keepalive 60, client id "abc"
    (Connect("abc", 60), V311, "10 0f 00 04 4d 51 54 54 04 02 00 3c 00 03 61 62 63"),
    # the same in MQTT 5: level 5 and an empty property block before the payload
    (Connect("abc", 60), V5, "10 10 00 04 4d 51 54 54 05 02 00 3c 00 00 03 61 62 63"),
    # user name "u" and password "p" set flags 0x80 | 0x40 | clean 0x02
    (
        Connect("abc", 60, username="u", password=b"p"),
        V311,
        "10 15 00 04 4d 51 54 54 04 c2 00 3c 00 03 61 62 63 00 01 75 00 01 70",
    ),
    # persistent session, keepalive 0, session expiry 60 s
    (
        Connect("c", 0, clean=False, properties=((Prop.SESSION_EXPIRY_INTERVAL, 60),)),
        V5,
        "10 13 00 04 4d 51 54 54 05 00 00 00 05 11 00 00 00 3c 00 01 63",
    ),
    (Connack(), V311, "20 02 00 00"),
    (Connack(session_present=True), V311, "20 02 01 00"),
    (Connack(reason=5), V311, "20 02 00 05"),
    (Connack(reason=0x86), V5, "20 03 00 86 00"),
    (Connack(properties=((Prop.RECEIVE_MAXIMUM, 20),)), V5, "20 06 00 00 03 21 00 14"),
    # PUBLISH QoS 0 "a/b" "hi"
    (Publish("a/b", b"hi"), V311, "30 07 00 03 61 2f 62 68 69"),
    # QoS 1, retain, packet id 10
    (
        Publish("a/b", b"hi", qos=1, retain=True, packet_id=10),
        V311,
        "33 09 00 03 61 2f 62 00 0a 68 69",
    ),
    # QoS 2 + DUP, MQTT 5 (empty property block after the packet id)
    (
        Publish("a/b", b"hi", qos=2, dup=True, packet_id=10),
        V5,
        "3c 0a 00 03 61 2f 62 00 0a 00 68 69",
    ),
    (
        Publish("t", b"", properties=((Prop.USER_PROPERTY, ("k", "v")),)),
        V5,
        "30 0b 00 01 74 07 26 00 01 6b 00 01 76",
    ),
    (Ack(PUBACK, 10), V311, "40 02 00 0a"),
    (Ack(PUBREC, 10), V311, "50 02 00 0a"),
    (Ack(PUBREL, 10), V311, "62 02 00 0a"),
    (Ack(PUBCOMP, 10), V311, "70 02 00 0a"),
    # MQTT 5: reason 0 without properties may be omitted; other reasons are sent
    (Ack(PUBACK, 10), V5, "40 02 00 0a"),
    (Ack(PUBACK, 10, Reason.NO_MATCHING_SUBSCRIBERS), V5, "40 03 00 0a 10"),
    (
        Ack(PUBREC, 1, Reason.QUOTA_EXCEEDED, ((Prop.REASON_STRING, "x"),)),
        V5,
        "50 08 00 01 97 04 1f 00 01 78",
    ),
    (Subscribe(1, (("a/#", 1),)), V311, "82 08 00 01 00 03 61 2f 23 01"),
    (Subscribe(1, (("a/#", 1),)), V5, "82 09 00 01 00 00 03 61 2f 23 01"),
    (Suback(1, (1,)), V311, "90 03 00 01 01"),
    (Suback(1, (0x80,)), V311, "90 03 00 01 80"),
    (Suback(1, (0, 2)), V5, "90 05 00 01 00 00 02"),
    (Unsubscribe(2, ("a/#",)), V311, "a2 07 00 02 00 03 61 2f 23"),
    (Unsuback(2), V311, "b0 02 00 02"),
    (Unsuback(2, (0,)), V5, "b0 04 00 02 00 00"),
    (PingReq(), V311, "c0 00"),
    (PingResp(), V5, "d0 00"),
    (Disconnect(), V311, "e0 00"),
    (Disconnect(), V5, "e0 00"),
    (Disconnect(Reason.SERVER_SHUTTING_DOWN), V5, "e0 01 8b"),
]


@pytest.mark.parametrize(("packet", "version", "wire"), FRAMES)
def test_encode_matches_hand_checked_frame(packet: Packet, version: int, wire: str) -> None:
    assert encode(packet, version) == h(wire)


@pytest.mark.parametrize(("packet", "version", "wire"), FRAMES)
def test_decode_hand_checked_frame(packet: Packet, version: int, wire: str) -> None:
    assert Decoder(version).feed(h(wire)) == [packet]


def test_decoder_byte_by_byte_and_in_one_chunk() -> None:
    packets = [p for p, v, _ in FRAMES if v == V5]
    stream = b"".join(encode(p, V5) for p in packets)
    one = Decoder(V5).feed(stream)
    decoder = Decoder(V5)
    dribbled = [p for i in range(len(stream)) for p in decoder.feed(stream[i : i + 1])]
    assert one == dribbled == packets
    assert decoder.buffered == 0


def test_large_publish_with_multibyte_length_split_in_the_header() -> None:
    payload = bytes(range(256)) * 1000
    frame = encode(Publish("big", payload, qos=1, packet_id=7), V311)
    assert frame[:4] == h("32 87 d0 0f")  # 256007 = 0x3e807 -> 87 d0 0f
    decoder = Decoder(V311)
    assert decoder.feed(frame[:2]) == []
    assert decoder.feed(frame[2:3]) == []
    assert decoder.feed(frame[3:]) == [Publish("big", payload, qos=1, packet_id=7)]


def test_publish_prefix_is_the_frame_head() -> None:
    frame = encode(Publish("a/b", b"x" * 30, qos=1, packet_id=3), V311)
    prefix = publish_prefix("a/b", 1, False, False, len(frame) - 2)
    assert frame.startswith(prefix)
    assert frame[len(prefix) :] == b"\x00\x03" + b"x" * 30


def test_properties_of_every_type_round_trip() -> None:
    props = (
        (Prop.PAYLOAD_FORMAT_INDICATOR, 1),
        (Prop.MESSAGE_EXPIRY_INTERVAL, 3600),
        (Prop.CONTENT_TYPE, "text/plain"),
        (Prop.CORRELATION_DATA, b"\x00\x01"),
        (Prop.SUBSCRIPTION_IDENTIFIER, 300),
        (Prop.TOPIC_ALIAS, 2),
        (Prop.USER_PROPERTY, ("a", "1")),
        (Prop.USER_PROPERTY, ("a", "2")),
    )
    packet = Publish("t", b"p", properties=props)
    assert Decoder(V5).feed(encode(packet, V5)) == [packet]
    assert encode_properties(((Prop.SUBSCRIPTION_IDENTIFIER, 300),)) == h("03 0b ac 02")


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("36 02 00 00", "QoS 3"),
        ("40 03 00 0a 10", "trailing"),  # a reason code is not valid in 3.1.1
        ("41 02 00 0a", "reserved flags"),
        ("60 02 00 0a", "reserved flags"),  # PUBREL needs flags 0x2
        ("30 ff ff ff ff 7f", "longer than 4"),
        ("30 05 00 09 61 62 63", "shorter"),
        ("f0 00", "unsupported packet type"),
        ("20 02 02 00", "reserved"),
    ],
)
def test_malformed_input_is_rejected(wire: str, message: str) -> None:
    with pytest.raises(MalformedPacket, match=message):
        Decoder(V311).feed(h(wire))


def test_unknown_property_and_bad_utf8() -> None:
    with pytest.raises(MalformedPacket, match="unknown property"):
        Decoder(V5).feed(h("40 05 00 01 00 01 7f"))
    with pytest.raises(MalformedPacket, match="UTF-8"):
        Decoder(V311).feed(h("30 04 00 02 ff fe"))


def test_the_maximum_packet_size_is_enforced_from_the_fixed_header() -> None:
    with pytest.raises(PacketTooLarge, match="packet of 131 B over the maximum packet size of 100"):
        Decoder(V311, max_size=100).feed(h("30 80 01"))
    # the largest remaining length there is, refused from its 5 header bytes alone
    with pytest.raises(PacketTooLarge) as caught:
        Decoder(V5, max_size=16 << 20).split(h("30 ff ff ff 7f"))
    assert (caught.value.size, caught.value.limit) == (268_435_460, 16 << 20)
    # the limit counts the fixed header: a packet of exactly max_size bytes passes
    packet = encode(Publish("t", b"x" * 95), V311)
    assert len(packet) == 100
    assert Decoder(V311, max_size=100).feed(packet) == [Publish("t", b"x" * 95)]


def test_a_packet_longer_than_a_read_is_kept_read_by_read_and_joined_once() -> None:
    packet = encode(Publish("big/topic", bytes(range(256)) * 4096, qos=1, packet_id=7), V5)
    decoder = Decoder(V5)
    reads = [packet[i : i + 4096] for i in range(0, len(packet), 4096)]
    for read in reads[:-1]:
        assert decoder.split(read) == []
        assert decoder.messages == []
    assert decoder.buffered == len(packet) - len(reads[-1])
    assert decoder.split(reads[-1] + packet[:3]) == []
    (start, end) = decoder.messages
    assert decoder.data[start:end] == bytes(range(256)) * 4096
    assert decoder.to_ack == [7]
    assert decoder.buffered == 3


def test_reason_texts() -> None:
    assert reason_text(0x80, V311) == "failure"  # the one 3.1.1 SUBACK failure
    assert reason_text(0x01, V5) == "granted qos 1"
    assert reason_text(0x86, V5) == "bad user name or password"
    assert reason_text(0xFE, V5) == "reason 0xfe"


def test_connack_texts_are_version_specific() -> None:
    assert connack_text(5, V311) == "not authorized"
    assert connack_text(1, V311) == "unacceptable protocol version"
    assert connack_text(0x86, V311) == "return code 0x86"
    # An MQTT 5 client answered 0x01 by a 3.1.1 broker: not "granted qos 1".
    assert connack_text(1, V5) == "unacceptable protocol version (a 3.1.1 return code)"
    assert connack_text(0x84, V5) == "unsupported protocol version"
    assert connack_text(0x85, V5) == "client identifier not valid"
