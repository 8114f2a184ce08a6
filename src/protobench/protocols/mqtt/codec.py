"""A small sans-I/O MQTT 3.1.1 and 5.0 codec: packets in, bytes out, and back.

No sockets, no clock. :func:`encode` turns a packet into bytes; a
:class:`Decoder` takes bytes as they arrive (``feed``) and returns the complete
packets they finish. Both sides of the protocol are covered so a client core
can be tested against a peer in memory: CONNECT/CONNACK, PUBLISH,
PUBACK/PUBREC/PUBREL/PUBCOMP (one :class:`Ack` class with its ``kind``),
SUBSCRIBE/SUBACK, UNSUBSCRIBE/UNSUBACK, PINGREQ/PINGRESP and DISCONNECT; a
CONNECT may carry a :class:`Will` (with its MQTT 5 will properties). The MQTT 5
AUTH packet is not supported (a peer sending AUTH is a protocol error).

MQTT 5 properties are a tuple of ``(identifier, value)`` pairs in wire order
(identifiers may repeat: user properties, subscription identifiers); values
are ``int``, ``str``, ``bytes`` or a ``(str, str)`` pair by the identifier's
type. MQTT 3.1.1 packets carry no properties and no reason codes on acks; the
CONNACK return code of 3.1.1 is kept in ``Connack.reason`` as it is (0..5).

Every malformed input raises :class:`MalformedPacket`.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from protobench.vocab.exceptions import Incomplete

V311: Final = 4
V5: Final = 5
MAX_REMAINING: Final = 268_435_455
MAX_PACKET: Final = MAX_REMAINING + 5
"""The largest packet the protocol can express (a 4-byte remaining length and its header)."""
LONG_PACKET: Final = 64 * 1024
"""A packet longer than this, split over reads, is joined once, when its last read came."""
TOPICS_REMEMBERED: Final = 16
"""Topics (length-prefixed, as on the wire) a :class:`Decoder` remembers as valid UTF-8."""

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP, DISCONNECT = (
    8,
    9,
    10,
    11,
    12,
    13,
    14,
)

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")

type PropValue = int | str | bytes | tuple[str, str]
type Properties = tuple[tuple[int, PropValue], ...]


class MalformedPacket(Incomplete, ValueError):
    """Bytes that are not a valid MQTT packet of the version in use."""


class PacketTooLarge(MalformedPacket):
    """A packet longer than the decoder's maximum packet size (refused before it is read)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"packet of {size} B over the maximum packet size of {limit} B")
        self.size = size
        self.limit = limit


class Prop(enum.IntEnum):
    """MQTT 5 property identifiers."""

    PAYLOAD_FORMAT_INDICATOR = 0x01
    MESSAGE_EXPIRY_INTERVAL = 0x02
    CONTENT_TYPE = 0x03
    RESPONSE_TOPIC = 0x08
    CORRELATION_DATA = 0x09
    SUBSCRIPTION_IDENTIFIER = 0x0B
    SESSION_EXPIRY_INTERVAL = 0x11
    ASSIGNED_CLIENT_IDENTIFIER = 0x12
    SERVER_KEEP_ALIVE = 0x13
    AUTHENTICATION_METHOD = 0x15
    AUTHENTICATION_DATA = 0x16
    REQUEST_PROBLEM_INFORMATION = 0x17
    WILL_DELAY_INTERVAL = 0x18
    REQUEST_RESPONSE_INFORMATION = 0x19
    RESPONSE_INFORMATION = 0x1A
    SERVER_REFERENCE = 0x1C
    REASON_STRING = 0x1F
    RECEIVE_MAXIMUM = 0x21
    TOPIC_ALIAS_MAXIMUM = 0x22
    TOPIC_ALIAS = 0x23
    MAXIMUM_QOS = 0x24
    RETAIN_AVAILABLE = 0x25
    USER_PROPERTY = 0x26
    MAXIMUM_PACKET_SIZE = 0x27
    WILDCARD_SUBSCRIPTION_AVAILABLE = 0x28
    SUBSCRIPTION_IDENTIFIER_AVAILABLE = 0x29
    SHARED_SUBSCRIPTION_AVAILABLE = 0x2A


_BYTE_PROPS = {0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A}
_U16_PROPS = {0x13, 0x21, 0x22, 0x23}
_U32_PROPS = {0x02, 0x11, 0x18, 0x27}
_VARINT_PROPS = {0x0B}
_STR_PROPS = {0x03, 0x08, 0x12, 0x15, 0x1A, 0x1C, 0x1F}
_BIN_PROPS = {0x09, 0x16}
_PAIR_PROPS = {0x26}


class Reason(enum.IntEnum):
    """MQTT 5 reason codes (values >= 0x80 are failures)."""

    SUCCESS = 0x00
    GRANTED_QOS_1 = 0x01
    GRANTED_QOS_2 = 0x02
    DISCONNECT_WITH_WILL = 0x04
    NO_MATCHING_SUBSCRIBERS = 0x10
    NO_SUBSCRIPTION_EXISTED = 0x11
    CONTINUE_AUTHENTICATION = 0x18
    RE_AUTHENTICATE = 0x19
    UNSPECIFIED_ERROR = 0x80
    MALFORMED_PACKET = 0x81
    PROTOCOL_ERROR = 0x82
    IMPLEMENTATION_SPECIFIC_ERROR = 0x83
    UNSUPPORTED_PROTOCOL_VERSION = 0x84
    CLIENT_IDENTIFIER_NOT_VALID = 0x85
    BAD_USER_NAME_OR_PASSWORD = 0x86
    NOT_AUTHORIZED = 0x87
    SERVER_UNAVAILABLE = 0x88
    SERVER_BUSY = 0x89
    BANNED = 0x8A
    SERVER_SHUTTING_DOWN = 0x8B
    BAD_AUTHENTICATION_METHOD = 0x8C
    KEEP_ALIVE_TIMEOUT = 0x8D
    SESSION_TAKEN_OVER = 0x8E
    TOPIC_FILTER_INVALID = 0x8F
    TOPIC_NAME_INVALID = 0x90
    PACKET_IDENTIFIER_IN_USE = 0x91
    PACKET_IDENTIFIER_NOT_FOUND = 0x92
    RECEIVE_MAXIMUM_EXCEEDED = 0x93
    TOPIC_ALIAS_INVALID = 0x94
    PACKET_TOO_LARGE = 0x95
    MESSAGE_RATE_TOO_HIGH = 0x96
    QUOTA_EXCEEDED = 0x97
    ADMINISTRATIVE_ACTION = 0x98
    PAYLOAD_FORMAT_INVALID = 0x99
    RETAIN_NOT_SUPPORTED = 0x9A
    QOS_NOT_SUPPORTED = 0x9B
    USE_ANOTHER_SERVER = 0x9C
    SERVER_MOVED = 0x9D
    SHARED_SUBSCRIPTIONS_NOT_SUPPORTED = 0x9E
    CONNECTION_RATE_EXCEEDED = 0x9F
    MAXIMUM_CONNECT_TIME = 0xA0
    SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED = 0xA1
    WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED = 0xA2


CONNACK_V311_TEXT: Final = {
    1: "unacceptable protocol version",
    2: "identifier rejected",
    3: "server unavailable",
    4: "bad user name or password",
    5: "not authorized",
}
"""The text of MQTT 3.1.1 CONNACK return codes."""


def connack_text(code: int, version: int) -> str:
    """The meaning of a refusing CONNACK's code for a client that asked for ``version``.

    A 3.1.1 broker answers 1..5 (3.1.1 return codes), an MQTT 5 broker a reason
    code >= 0x80. 1..5 are no MQTT 5 CONNACK reason, so a v5 client reading one
    was answered by a broker speaking 3.1.1 (0x01: it does not speak MQTT 5).
    """
    text = CONNACK_V311_TEXT.get(code)
    if text is not None:
        return text if version == V311 else f"{text} (a 3.1.1 return code)"
    if version == V311:
        return f"return code 0x{code:02x}"
    return reason_text(code, version)


def reason_text(code: int, version: int) -> str:
    """A short name for the reason code of a SUBACK, PUBACK, DISCONNECT... (MQTT 5).

    3.1.1 has one failure code, the SUBACK's 0x80. CONNACK: :func:`connack_text`.
    """
    if version == V311 and code == 0x80:
        return "failure"
    try:
        return Reason(code).name.lower().replace("_", " ")
    except ValueError:
        return f"reason 0x{code:02x}"


# --------------------------------------------------------------------------- packets


@dataclass(frozen=True, slots=True)
class Will:
    """The message a broker publishes for a client whose connection ends without DISCONNECT
    (MQTT 5: with its will properties, e.g. the will delay and the message expiry)."""

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class Connect:
    client_id: str
    keepalive: int = 60
    clean: bool = True
    username: str | None = None
    password: bytes | None = None
    properties: Properties = ()
    will: Will | None = None


@dataclass(frozen=True, slots=True)
class Connack:
    session_present: bool = False
    reason: int = 0
    properties: Properties = ()


@dataclass(slots=True)
class Publish:
    """An application message (not frozen: constructed once per message on hot paths)."""

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int = 0
    properties: Properties = ()


@dataclass(slots=True)
class Ack:
    """PUBACK, PUBREC, PUBREL or PUBCOMP (``kind`` is the packet type; not frozen: hot path)."""

    kind: int
    packet_id: int
    reason: int = 0
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class Subscribe:
    """``topics`` is a tuple of ``(filter, options)``; options' low two bits are the QoS."""

    packet_id: int
    topics: tuple[tuple[str, int], ...]
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class Suback:
    packet_id: int
    reasons: tuple[int, ...]
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    packet_id: int
    topics: tuple[str, ...]
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class Unsuback:
    packet_id: int
    reasons: tuple[int, ...] = ()
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class PingReq:
    pass


@dataclass(frozen=True, slots=True)
class PingResp:
    pass


@dataclass(frozen=True, slots=True)
class Disconnect:
    reason: int = 0
    properties: Properties = field(default=())


type Packet = (
    Connect
    | Connack
    | Publish
    | Ack
    | Subscribe
    | Suback
    | Unsubscribe
    | Unsuback
    | PingReq
    | PingResp
    | Disconnect
)

PINGREQ_BYTES: Final = b"\xc0\x00"
PINGRESP_BYTES: Final = b"\xd0\x00"
DISCONNECT_BYTES: Final = b"\xe0\x00"


# --------------------------------------------------------------------------- encoding


def encode_varint(value: int) -> bytes:
    """MQTT variable byte integer (1 to 4 bytes)."""
    if not 0 <= value <= MAX_REMAINING:
        raise ValueError(f"variable byte integer out of range: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_str(text: str) -> bytes:
    data = text.encode()
    if len(data) > 0xFFFF:
        raise ValueError("string longer than 65535 bytes")
    return _U16.pack(len(data)) + data


def encode_bin(data: bytes) -> bytes:
    if len(data) > 0xFFFF:
        raise ValueError("binary data longer than 65535 bytes")
    return _U16.pack(len(data)) + data


def encode_properties(props: Properties) -> bytes:
    """An MQTT 5 property block: its length, then each property."""
    body = bytearray()
    for ident, value in props:
        body.append(ident)
        if ident in _BYTE_PROPS and isinstance(value, int):
            body.append(value)
        elif ident in _U16_PROPS and isinstance(value, int):
            body += _U16.pack(value)
        elif ident in _U32_PROPS and isinstance(value, int):
            body += _U32.pack(value)
        elif ident in _VARINT_PROPS and isinstance(value, int):
            body += encode_varint(value)
        elif ident in _STR_PROPS and isinstance(value, str):
            body += encode_str(value)
        elif ident in _BIN_PROPS and isinstance(value, bytes):
            body += encode_bin(value)
        elif ident in _PAIR_PROPS and isinstance(value, tuple):
            body += encode_str(value[0]) + encode_str(value[1])
        else:
            raise ValueError(f"property 0x{ident:02x} cannot hold {value!r}")
    return encode_varint(len(body)) + bytes(body)


def fixed_header(first: int, remaining: int) -> bytes:
    """The fixed header of a packet: type and flags, then the remaining length."""
    if remaining < 0x80:
        return bytes((first, remaining))
    return bytes((first,)) + encode_varint(remaining)


def _frame(first: int, body: bytes) -> bytes:
    return fixed_header(first, len(body)) + body


def publish_prefix(topic: str, qos: int, retain: bool, dup: bool, remaining: int) -> bytes:
    """Fixed header and topic of a PUBLISH whose remaining length is ``remaining``.

    The hot path of publishers: what follows is the packet identifier (QoS > 0),
    the property block (MQTT 5) and the payload.
    """
    first = (PUBLISH << 4) | (0x08 if dup else 0) | (qos << 1) | (1 if retain else 0)
    return fixed_header(first, remaining) + encode_str(topic)


def encode(packet: Packet, version: int = V311) -> bytes:
    """The bytes of ``packet`` for protocol ``version`` (4 = 3.1.1, 5 = 5.0)."""
    v5 = version == V5
    match packet:
        case Publish():
            return _encode_publish(packet, v5)
        case Ack():
            return _encode_ack(packet, v5)
        case Connect():
            return _encode_connect(packet, version)
        case Connack():
            return _encode_connack(packet, v5)
        case Subscribe():
            return _encode_subscribe(packet, v5)
        case Suback():
            return _encode_suback(packet, v5)
        case Unsubscribe():
            return _encode_unsubscribe(packet, v5)
        case Unsuback():
            return _encode_unsuback(packet, v5)
        case PingReq():
            return PINGREQ_BYTES
        case PingResp():
            return PINGRESP_BYTES
        case Disconnect():
            return _encode_disconnect(packet, v5)
    raise TypeError(f"not an MQTT packet: {packet!r}")


def _encode_publish(packet: Publish, v5: bool) -> bytes:
    qos = packet.qos
    if qos not in (0, 1, 2):
        raise ValueError(f"invalid QoS {qos}")
    body = encode_str(packet.topic)
    if qos:
        body += _U16.pack(packet.packet_id)
    if v5:
        body += encode_properties(packet.properties)
    body += packet.payload
    first = (PUBLISH << 4) | (0x08 if packet.dup else 0) | (qos << 1) | (1 if packet.retain else 0)
    return _frame(first, body)


def _encode_ack(packet: Ack, v5: bool) -> bytes:
    """PUBACK, PUBREC, PUBREL or PUBCOMP; MQTT 5 omits a success without properties."""
    kind = packet.kind
    if kind not in (PUBACK, PUBREC, PUBREL, PUBCOMP):
        raise ValueError(f"not an acknowledgement type: {kind}")
    body = _U16.pack(packet.packet_id)
    if v5 and (packet.reason or packet.properties):
        body += _reason_and_properties(packet.reason, packet.properties)
    return _frame((kind << 4) | (0x02 if kind == PUBREL else 0), body)


def _reason_and_properties(reason: int, props: Properties) -> bytes:
    """An MQTT 5 reason code, then the property block unless there is none."""
    return bytes((reason,)) + encode_properties(props) if props else bytes((reason,))


def _encode_connect(packet: Connect, version: int) -> bytes:
    flags = 0x02 if packet.clean else 0
    if packet.username is not None:
        flags |= 0x80
    if packet.password is not None:
        flags |= 0x40
    will = packet.will
    if will is not None:
        if will.qos not in (0, 1, 2):
            raise ValueError(f"invalid will QoS {will.qos}")
        flags |= 0x04 | will.qos << 3 | (0x20 if will.retain else 0)
    body = encode_str("MQTT") + bytes((version, flags)) + _U16.pack(packet.keepalive)
    if version == V5:
        body += encode_properties(packet.properties)
    body += encode_str(packet.client_id)
    if will is not None:
        if version == V5:
            body += encode_properties(will.properties)
        body += encode_str(will.topic) + encode_bin(will.payload)
    if packet.username is not None:
        body += encode_str(packet.username)
    if packet.password is not None:
        body += encode_bin(packet.password)
    return _frame(CONNECT << 4, body)


def _encode_connack(packet: Connack, v5: bool) -> bytes:
    body = bytes((1 if packet.session_present else 0, packet.reason))
    if v5:
        body += encode_properties(packet.properties)
    return _frame(CONNACK << 4, body)


def _id_and_properties(packet_id: int, props: Properties, v5: bool) -> bytes:
    """The variable header of SUBSCRIBE, SUBACK, UNSUBSCRIBE and UNSUBACK."""
    head = _U16.pack(packet_id)
    return head + encode_properties(props) if v5 else head


def _encode_subscribe(packet: Subscribe, v5: bool) -> bytes:
    body = _id_and_properties(packet.packet_id, packet.properties, v5)
    for topic, options in packet.topics:
        body += encode_str(topic) + bytes((options,))
    return _frame((SUBSCRIBE << 4) | 0x02, body)


def _encode_suback(packet: Suback, v5: bool) -> bytes:
    body = _id_and_properties(packet.packet_id, packet.properties, v5)
    return _frame(SUBACK << 4, body + bytes(packet.reasons))


def _encode_unsubscribe(packet: Unsubscribe, v5: bool) -> bytes:
    body = _id_and_properties(packet.packet_id, packet.properties, v5)
    for topic in packet.topics:
        body += encode_str(topic)
    return _frame((UNSUBSCRIBE << 4) | 0x02, body)


def _encode_unsuback(packet: Unsuback, v5: bool) -> bytes:
    """MQTT 3.1.1's UNSUBACK has no reason codes."""
    body = _id_and_properties(packet.packet_id, packet.properties, v5)
    return _frame(UNSUBACK << 4, body + bytes(packet.reasons) if v5 else body)


def _encode_disconnect(packet: Disconnect, v5: bool) -> bytes:
    """Two bytes, unless an MQTT 5 one carries a reason or properties."""
    if v5 and (packet.reason or packet.properties):
        return _frame(DISCONNECT << 4, _reason_and_properties(packet.reason, packet.properties))
    return DISCONNECT_BYTES


# --------------------------------------------------------------------------- decoding


_SHORT: Final = "packet shorter than its contents"


class _Reader:
    """A cursor over one packet's body."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def need(self, n: int) -> None:
        if self.pos + n > self.end:
            raise MalformedPacket(_SHORT)

    def byte(self) -> int:
        self.need(1)
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise MalformedPacket(_SHORT)
        self.pos = pos + 2
        return self.data[pos] << 8 | self.data[pos + 1]

    def u32(self) -> int:
        self.need(4)
        value: int = _U32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return value

    def varint(self) -> int:
        value = shift = 0
        for _ in range(4):
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise MalformedPacket("variable byte integer longer than 4 bytes")

    def bin(self) -> bytes:
        """Two bytes of length, then as many bytes (the checks of ``u16`` and ``need`` inlined)."""
        data = self.data
        pos = self.pos + 2
        if pos > self.end:
            raise MalformedPacket(_SHORT)
        end = pos + (data[pos - 2] << 8 | data[pos - 1])
        if end > self.end:
            raise MalformedPacket(_SHORT)
        self.pos = end
        return bytes(data[pos:end])

    def str(self) -> str:
        try:
            return self.bin().decode()
        except UnicodeDecodeError:
            raise MalformedPacket("string is not valid UTF-8") from None

    def rest(self) -> bytes:
        value = self.data[self.pos : self.end]
        self.pos = self.end
        return bytes(value)

    @property
    def left(self) -> int:
        return self.end - self.pos

    def properties(self) -> Properties:
        length = self.varint()
        self.need(length)
        end = self.pos + length
        props: list[tuple[int, PropValue]] = []
        while self.pos < end:
            ident = self.varint()
            value: PropValue
            if ident in _BYTE_PROPS:
                value = self.byte()
            elif ident in _U16_PROPS:
                value = self.u16()
            elif ident in _U32_PROPS:
                value = self.u32()
            elif ident in _VARINT_PROPS:
                value = self.varint()
            elif ident in _STR_PROPS:
                value = self.str()
            elif ident in _BIN_PROPS:
                value = self.bin()
            elif ident in _PAIR_PROPS:
                value = (self.str(), self.str())
            else:
                raise MalformedPacket(f"unknown property identifier 0x{ident:02x}")
            props.append((ident, value))
        if self.pos != end:
            raise MalformedPacket("property block length does not match its contents")
        return tuple(props)

    def done(self) -> None:
        if self.pos != self.end:
            raise MalformedPacket("trailing bytes after the packet's contents")


def _decode_body(first: int, data: bytes, start: int, end: int, version: int) -> Packet:
    kind = first >> 4
    flags = first & 0x0F
    r = _Reader(data, start, end)
    if kind == PUBLISH:
        return _decode_publish(r, flags, version == V5)
    if flags != _FLAGS.get(kind, 0):
        raise MalformedPacket(f"packet type {kind} with reserved flags 0x{flags:x}")
    decode = _DECODERS.get(kind)
    if decode is None:
        raise MalformedPacket(f"unsupported packet type {kind}")
    packet = decode(r, kind, version == V5)
    r.done()
    return packet


def _decode_publish(r: _Reader, flags: int, v5: bool) -> Publish:
    qos = (flags >> 1) & 0x03
    if qos == 3:
        raise MalformedPacket("PUBLISH with QoS 3")
    topic = r.str()
    packet_id = r.u16() if qos else 0
    props = r.properties() if v5 else ()
    return Publish(topic, r.rest(), qos, bool(flags & 1), bool(flags & 8), packet_id, props)


def _decode_ack(r: _Reader, kind: int, v5: bool) -> Ack:
    packet_id = r.u16()
    reason = r.byte() if v5 and r.left else 0
    return Ack(kind, packet_id, reason, r.properties() if v5 and r.left else ())


def _decode_connack(r: _Reader, kind: int, v5: bool) -> Connack:
    ack_flags = r.byte()
    if ack_flags & 0xFE:
        raise MalformedPacket("CONNACK with reserved flags set")
    reason = r.byte()
    return Connack(bool(ack_flags & 1), reason, r.properties() if v5 and r.left else ())


def _decode_suback(r: _Reader, kind: int, v5: bool) -> Suback:
    packet_id = r.u16()
    props = r.properties() if v5 else ()
    return Suback(packet_id, tuple(r.rest()), props)


def _decode_unsuback(r: _Reader, kind: int, v5: bool) -> Unsuback:
    """MQTT 3.1.1's UNSUBACK has no reason codes."""
    packet_id = r.u16()
    props = r.properties() if v5 else ()
    return Unsuback(packet_id, tuple(r.rest()) if v5 else (), props)


def _decode_ping(r: _Reader, kind: int, v5: bool) -> PingReq | PingResp:
    return PingReq() if kind == PINGREQ else PingResp()


def _decode_disconnect(r: _Reader, kind: int, v5: bool) -> Disconnect:
    reason = r.byte() if v5 and r.left else 0
    return Disconnect(reason, r.properties() if v5 and r.left else ())


def _decode_connect(r: _Reader, kind: int, v5: bool) -> Connect:
    """The CONNECT's own protocol level decides its properties, not the decoder's version."""
    if r.str() != "MQTT":
        raise MalformedPacket("CONNECT with a protocol name other than MQTT")
    level = r.byte()
    if level not in (V311, V5):
        raise MalformedPacket(f"unsupported protocol level {level}")
    flags = r.byte()
    if flags & 0x01:
        raise MalformedPacket("CONNECT with the reserved flag set")
    will_qos = (flags >> 3) & 0x03
    if not flags & 0x04 and flags & 0x38:
        raise MalformedPacket("CONNECT with will QoS or retain but no will")
    if will_qos == 3:
        raise MalformedPacket("CONNECT with will QoS 3")
    keepalive = r.u16()
    props = r.properties() if level == V5 else ()
    client_id = r.str()
    will = None
    if flags & 0x04:
        will_props = r.properties() if level == V5 else ()
        will = Will(r.str(), r.bin(), will_qos, bool(flags & 0x20), will_props)
    username = r.str() if flags & 0x80 else None
    password = r.bin() if flags & 0x40 else None
    return Connect(client_id, keepalive, bool(flags & 0x02), username, password, props, will)


def _decode_subscribe(r: _Reader, kind: int, v5: bool) -> Subscribe:
    packet_id = r.u16()
    props = r.properties() if v5 else ()
    topics: list[tuple[str, int]] = []
    while r.left:
        topics.append((r.str(), r.byte()))
    if not topics:
        raise MalformedPacket("SUBSCRIBE without a topic filter")
    return Subscribe(packet_id, tuple(topics), props)


def _decode_unsubscribe(r: _Reader, kind: int, v5: bool) -> Unsubscribe:
    packet_id = r.u16()
    props = r.properties() if v5 else ()
    names: list[str] = []
    while r.left:
        names.append(r.str())
    if not names:
        raise MalformedPacket("UNSUBSCRIBE without a topic filter")
    return Unsubscribe(packet_id, tuple(names), props)


_FLAGS: Final = {PUBREL: 0x02, SUBSCRIBE: 0x02, UNSUBSCRIBE: 0x02}
"""The fixed header flags of every packet type but PUBLISH (0 when not here)."""

_DECODERS: Final[dict[int, Callable[[_Reader, int, bool], Packet]]] = {
    CONNECT: _decode_connect,
    CONNACK: _decode_connack,
    PUBACK: _decode_ack,
    PUBREC: _decode_ack,
    PUBREL: _decode_ack,
    PUBCOMP: _decode_ack,
    SUBSCRIBE: _decode_subscribe,
    SUBACK: _decode_suback,
    UNSUBSCRIBE: _decode_unsubscribe,
    UNSUBACK: _decode_unsuback,
    PINGREQ: _decode_ping,
    PINGRESP: _decode_ping,
    DISCONNECT: _decode_disconnect,
}
"""The body decoder of each packet type but PUBLISH: ``(reader, type, v5) -> packet``."""


_NO_SPANS: Final[list[int]] = []
_LONG: Final = b"(a long packet)"
"""``Decoder._buf`` while the reads of a long packet are kept in ``Decoder._reads``."""


class Decoder:
    """Splits a byte stream into packets: ``feed(data)`` returns the complete ones.

    ``max_size`` is the maximum packet size (MQTT 5's, fixed header included):
    a larger packet raises :class:`PacketTooLarge` as soon as its fixed header
    is read, before any of it is buffered. The work is linear in the bytes
    received: the reads of a packet longer than :data:`LONG_PACKET` are kept
    as they come and joined once, when the last one arrives (a shorter one's
    start is joined to the next read, as cheap for the few reads it takes).

    :meth:`split` is ``feed`` for the hot path of a client: the commonest
    packets are not built as objects but left as offsets and numbers in
    :attr:`data`, :attr:`messages`, :attr:`to_ack` and :attr:`acked`.
    """

    __slots__ = (
        "_buf",
        "_have",
        "_need",
        "_reads",
        "_topics",
        "acked",
        "data",
        "max_size",
        "messages",
        "to_ack",
        "version",
    )

    def __init__(self, version: int = V311, max_size: int = MAX_PACKET) -> None:
        self.version = version
        self.max_size = max_size
        self._buf = b""
        """The start of an incomplete packet (:data:`_LONG`: a long one, in ``_reads``)."""
        self._reads: list[bytes] = []
        """The reads so far of an incomplete packet longer than :data:`LONG_PACKET`."""
        self._have = 0
        """The bytes in ``_reads``."""
        self._need = 0
        """The length of the packet ``_reads`` holds the start of."""
        self._topics: tuple[bytes, ...] = ()
        self.data = b""
        # Shared and never appended to: split() replaces them before it appends.
        self.messages: list[int] = _NO_SPANS
        self.to_ack: list[int] = _NO_SPANS
        self.acked: list[int] = _NO_SPANS

    @property
    def buffered(self) -> int:
        """Bytes held back as the start of an incomplete packet."""
        return self._have if self._buf is _LONG else len(self._buf)

    def feed(self, data: bytes) -> list[Packet]:
        """The packets ``data`` completes, every one built as a packet object."""
        return self._decode(data, False)

    def split(self, data: bytes) -> list[Packet]:
        """:meth:`feed`, except that the commonest packets are not built as objects.

        * A PUBLISH of QoS 0, or of QoS 1 with a non-zero packet identifier
          (MQTT 5: with an empty property block), adds the start and end
          offsets of its payload in :attr:`data` (the buffer this call decoded)
          to :attr:`messages`, one pair per message in arrival order; a QoS 1
          one also adds its packet identifier to :attr:`to_ack`. The topic is
          validated (UTF-8; the first :data:`TOPICS_REMEMBERED` valid topics
          are remembered and not decoded again) but not returned, nor are
          retain and dup.
        * A PUBACK carrying only a packet identifier (a success) adds that
          identifier to :attr:`acked`.

        Every other packet is returned as :meth:`feed` returns it. The input
        accepted and the :class:`MalformedPacket` raised are those of
        :meth:`feed` (a packet the fast path cannot take whole is decoded the
        general way). Each call replaces :attr:`data` and the three lists;
        after a :class:`MalformedPacket` they are not to be used.
        """
        self.messages = []
        self.to_ack = []
        self.acked = []
        return self._decode(data, True)

    def rest(self) -> None:
        """Drop the lists of the last :meth:`split` (an idle connection keeps none)."""
        self.messages = self.to_ack = self.acked = _NO_SPANS

    def _decode(self, data: bytes, fast: bool) -> list[Packet]:
        if self._buf:
            if self._buf is _LONG:
                reads = self._reads
                reads.append(data)
                self._have += len(data)
                if self._have < self._need:
                    return []
                data = b"".join(reads)
                reads.clear()
            else:
                data = self._buf + data
        n = len(data)
        pos = 0
        out: list[Packet] = []
        version = self.version
        max_size = self.max_size
        max_length = max_size - 2  # a remaining length above it may be too long
        v5 = version == V5
        messages = self.messages
        to_ack = self.to_ack
        acked = self.acked
        topics = self._topics
        last = n - 1  # a fixed header needs two bytes: pos < last
        while pos < last:
            first = data[pos]
            length = data[pos + 1]
            start = pos + 2
            if length & 0x80:
                length &= 0x7F
                shift = 7
                while True:
                    if start >= n:
                        self._buf = data[pos:]
                        self.data = data
                        return out
                    byte = data[start]
                    start += 1
                    length |= (byte & 0x7F) << shift
                    if not byte & 0x80:
                        break
                    shift += 7
                    if start - pos > 4:
                        raise MalformedPacket("remaining length longer than 4 bytes")
            end = start + length
            if length > max_length and end - pos > max_size:
                raise PacketTooLarge(end - pos, max_size)
            if end > n:
                if end - pos > LONG_PACKET:
                    self._buf = _LONG
                    self._reads.append(data[pos:])
                    self._have = n - pos
                    self._need = end - pos
                    self.data = data
                    return out
                break
            pos = end
            if fast:
                if first & 0xF4 == 0x30 and length >= 2:  # PUBLISH of QoS 0 or 1
                    at = start + 2 + (data[start] << 8 | data[start + 1])
                    pid = 0
                    if first & 0x02:
                        if at + 2 <= end:
                            pid = data[at] << 8 | data[at + 1]
                        at += 2
                    if v5:
                        at = at + 1 if at < end and not data[at] else end + 1
                    if at <= end and (pid or not first & 0x02):
                        if not data.startswith(topics, start):
                            self._check_topic(data, start)
                        if pid:
                            to_ack.append(pid)
                        messages.append(at)
                        messages.append(end)
                        continue
                elif first == 0x40 and length == 2:  # PUBACK, success
                    acked.append(data[start] << 8 | data[start + 1])
                    continue
            out.append(_decode_body(first, data, start, end, version))
        self._buf = data[pos:] if pos < n else b""
        self.data = data
        return out

    def _check_topic(self, data: bytes, start: int) -> None:
        """Validate the topic at ``start``; remember it while fewer than 16 are remembered."""
        end = start + 2 + (data[start] << 8 | data[start + 1])
        try:
            data[start + 2 : end].decode()
        except UnicodeDecodeError:
            raise MalformedPacket("string is not valid UTF-8") from None
        if len(self._topics) < TOPICS_REMEMBERED:
            self._topics += (data[start:end],)
