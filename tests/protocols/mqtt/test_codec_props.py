"""The MQTT codec on generated packets: every type decodes back to what was encoded.

The hand-checked frames of ``test_mqtt_codec.py`` pin the bytes; these pin the
round trip of each packet type's encoder and decoder over their whole input
space (both versions, any cut of the stream), and the fixed header's short
form against the variable byte integer.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    Packet,
    PingReq,
    PingResp,
    Prop,
    Properties,
    PropValue,
    Publish,
    Suback,
    Subscribe,
    Unsuback,
    Unsubscribe,
    encode,
    encode_varint,
    fixed_header,
)

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
names = st.text(max_size=12)
blobs = st.binary(max_size=40)

_VALUES: dict[Prop, st.SearchStrategy[PropValue]] = {
    Prop.PAYLOAD_FORMAT_INDICATOR: u8,
    Prop.MESSAGE_EXPIRY_INTERVAL: st.integers(0, 0xFFFF_FFFF),
    Prop.CONTENT_TYPE: names,
    Prop.CORRELATION_DATA: blobs,
    Prop.SUBSCRIPTION_IDENTIFIER: st.integers(0, 268_435_455),
    Prop.TOPIC_ALIAS: u16,
    Prop.USER_PROPERTY: st.tuples(names, names),
}
props = st.lists(
    st.sampled_from(list(_VALUES)).flatmap(lambda p: st.tuples(st.just(int(p)), _VALUES[p])),
    max_size=4,
).map(tuple)


def packets(version: int) -> st.SearchStrategy[Packet]:
    """Any packet of either side; MQTT 5 ones get a property block, 3.1.1 ones none."""
    v5 = version == V5
    reason = u8 if v5 else st.just(0)
    block = props if v5 else st.just(())
    reasons = st.lists(u8, max_size=5).map(tuple)
    kinds = st.sampled_from([PUBACK, PUBREC, PUBREL, PUBCOMP])
    user = st.none() | names
    filters = st.lists(st.tuples(names, u8), min_size=1).map(tuple)
    parts: list[st.SearchStrategy[Packet]] = [
        st.builds(
            _publish, st.integers(0, 2), u16, st.booleans(), st.booleans(), names, blobs, block
        ),
        st.builds(Ack, kinds, u16, reason, properties=block),
        st.builds(Connect, names, u16, st.booleans(), user, st.none() | blobs, properties=block),
        st.builds(Connack, st.booleans(), u8, properties=block),
        st.builds(Subscribe, u16, filters, properties=block),
        st.builds(Suback, u16, reasons, properties=block),
        st.builds(Unsubscribe, u16, st.lists(names, min_size=1).map(tuple), properties=block),
        st.builds(Unsuback, u16, reasons if v5 else st.just(()), properties=block),
        st.just(PingReq()),
        st.just(PingResp()),
        st.builds(Disconnect, reason, properties=block),
    ]
    return st.one_of(parts)


def _publish(
    qos: int, pid: int, retain: bool, dup: bool, topic: str, payload: bytes, block: Properties
) -> Publish:
    """A QoS 0 PUBLISH carries no packet identifier: it decodes as 0."""
    return Publish(topic, payload, qos, retain, dup, pid if qos else 0, block)


@pytest.mark.parametrize("version", [V311, V5])
@given(data=st.data())
def test_every_packet_type_round_trips_at_any_cut(version: int, data: st.DataObject) -> None:
    sent = data.draw(st.lists(packets(version), min_size=1, max_size=6))
    stream = b"".join(encode(packet, version) for packet in sent)
    cut = data.draw(st.integers(0, len(stream)))
    decoder = Decoder(version)
    assert decoder.feed(stream[:cut]) + decoder.feed(stream[cut:]) == sent
    assert decoder.buffered == 0


@given(first=u8, remaining=st.integers(0, 268_435_455))
def test_fixed_header_is_the_type_byte_and_the_variable_byte_integer(
    first: int, remaining: int
) -> None:
    assert fixed_header(first, remaining) == bytes((first,)) + encode_varint(remaining)


@pytest.mark.parametrize("remaining", [0, 127, 128, 16_383, 16_384])
def test_fixed_header_at_the_length_boundaries(remaining: int) -> None:
    assert fixed_header(0x30, remaining) == bytes((0x30,)) + encode_varint(remaining)
