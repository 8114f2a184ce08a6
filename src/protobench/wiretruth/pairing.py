"""Requests paired with their replies from captured packets: the wire's latency of each exchange.

A pairer takes the packets of a capture (in capture order) and the server's
port, and returns the exchanges it can pair: when the request's first packet
and the reply's last packet were on the wire. :data:`PAIRERS` names them by
protocol:

* ``http``: HTTP/1.1 with one request in flight per TCP connection (no
  pipelining: protobench, wrk, wrk2): per connection, a request begins with
  the first client packet carrying data after a reply, and its reply ends with
  the server's last data packet before the next request;
* ``websocket``: the same for WebSocket echoes (one message in flight per
  connection), leaving out the opening handshake and the closing frames;
* ``mqtt``: the same for MQTT 3.1.1 QoS 1/2 publishers (one PUBLISH in flight per
  connection: ``inflight = 1``, its PUBACK or PUBREC the reply), leaving out every
  other packet the client sends (CONNECT, pings, a publisher's end marker);
* ``mqtt-one-way``: a message from its publisher's PUBLISH to the broker to the
  broker's PUBLISH of it to a subscriber (the client of the exchange), matched by
  the publisher id and sequence of protobench's payload stamp
  (:mod:`protobench.protocols.mqtt.payload`); :func:`mqtt_delivered` times the same
  deliveries from the send time in the payload (the publisher's clock, which is
  what a subscriber's latency starts from) instead;
* ``bacnet-ip``: a confirmed request with its reply (SimpleACK, ComplexACK, Error,
  Reject, Abort; a segmented reply's last segment) by the client's address and the
  APDU's invoke ID, from the first datagram of the request (a resend is not a new
  request).

The pairers that read the payload (all but ``http``) use :attr:`~.pcap.Packet.data`:
a capture's snapshot length must reach the protocol's headers (200 bytes do).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from protobench.wiretruth.pcap import TCP, UDP, Packet


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and its reply on the wire (ns since the epoch), on the connection of
    ``client`` (its address and port)."""

    client: tuple[str, int]
    sent_ns: int
    answered_ns: int

    @property
    def latency_ns(self) -> int:
        return self.answered_ns - self.sent_ns


Pairer = Callable[[Iterable[Packet], int], list[Exchange]]
"""Pairs the exchanges of a capture with a server on the given port."""


def per_connection(
    packets: Iterable[Packet], port: int, is_request: Callable[[bytes], bool]
) -> list[Exchange]:
    """Exchanges with one request in flight per TCP connection: a client packet carrying data
    after a reply begins the next exchange, which counts when ``is_request`` says so of its
    first packet's data."""
    open_: dict[tuple[str, int], list[int]] = {}
    """Per client: [the first packet's time, the reply's last packet's so far (0: none yet),
    1 if it is a request (0: another exchange, left out)]."""
    done: list[Exchange] = []
    for packet in packets:
        if packet.protocol != TCP or not packet.payload:
            continue
        if packet.destination_port == port:
            client = (packet.source, packet.source_port)
            state = open_.get(client)
            if state is None or state[1]:
                if state is not None and state[2]:
                    done.append(Exchange(client, state[0], state[1]))
                open_[client] = [packet.time_ns, 0, int(is_request(packet.data))]
        elif packet.source_port == port:
            state = open_.get((packet.destination, packet.destination_port))
            if state is not None:
                state[1] = packet.time_ns
    done.extend(Exchange(client, s[0], s[1]) for client, s in open_.items() if s[1] and s[2])
    done.sort(key=lambda exchange: exchange.sent_ns)
    return done


def _any(data: bytes) -> bool:
    return True


def http(packets: Iterable[Packet], port: int) -> list[Exchange]:
    """HTTP/1.1 exchanges, one in flight per connection (see the module's docstring)."""
    return per_connection(packets, port, _any)


_WS_CLOSE = 0x8


def _ws_message(data: bytes) -> bool:
    """A client frame other than a close (the upgrade request is not a frame: it is text)."""
    return bool(data) and not data.startswith(b"GET ") and data[0] & 0x0F != _WS_CLOSE


def websocket(packets: Iterable[Packet], port: int) -> list[Exchange]:
    """WebSocket echoes, one message in flight per connection."""
    return per_connection(packets, port, _ws_message)


_MQTT_PUBLISH = 3
_STAMP = struct.Struct(">HHIIq")
"""protobench's payload stamp: magic, flags, publisher, sequence, send time."""
_MAGIC = 0x5042


def _mqtt_packets(data: bytes) -> Iterator[tuple[int, int, int]]:
    """``(first byte, start of the variable header, end)`` of each MQTT packet starting in
    ``data`` (the last may end beyond the captured bytes)."""
    at = 0
    while at + 2 <= len(data):
        length = shift = 0
        cursor = at + 1
        while cursor < len(data):
            byte = data[cursor]
            length |= (byte & 0x7F) << shift
            cursor += 1
            if not byte & 0x80:
                break
            shift += 7
            if shift > 21:
                return
        else:
            return
        yield data[at], cursor, cursor + length
        at = cursor + length


def _stamp_of(data: bytes, first: int, start: int) -> tuple[int, int, int, int] | None:
    """``(flags, publisher, sequence, send time)`` of protobench's stamp in an MQTT 3.1.1
    PUBLISH whose variable header starts at ``start``, if captured."""
    if first >> 4 != _MQTT_PUBLISH or start + 2 > len(data):
        return None
    at = start + 2 + int.from_bytes(data[start : start + 2], "big")
    if (first >> 1) & 3:
        at += 2  # the packet identifier
    if at + _STAMP.size > len(data):
        return None
    magic, flags, publisher, seq, sent = _STAMP.unpack_from(data, at)
    return (flags, publisher, seq, sent) if magic == _MAGIC else None


def _mqtt_publish(data: bytes) -> bool:
    """A QoS 1/2 PUBLISH of a stamped message (not an end marker) starts the client's data."""
    first_packet = next(_mqtt_packets(data), None)
    if first_packet is None:
        return False
    first, start, _ = first_packet
    stamp = _stamp_of(data, first, start)
    return stamp is not None and (first >> 1) & 3 > 0 and stamp[0] == 0


def mqtt(packets: Iterable[Packet], port: int) -> list[Exchange]:
    """QoS 1/2 publishes to their PUBACK/PUBREC, one in flight per connection."""
    return per_connection(packets, port, _mqtt_publish)


def mqtt_one_way(packets: Iterable[Packet], port: int) -> list[Exchange]:
    """Stamped messages from the publisher's PUBLISH to the broker to the broker's PUBLISH to
    each subscriber (the exchange's client), matched by publisher and sequence."""
    published: dict[tuple[int, int], int] = {}
    done: list[Exchange] = []
    for packet in packets:
        if packet.protocol != TCP or not packet.payload:
            continue
        inbound = packet.destination_port == port
        if not inbound and packet.source_port != port:
            continue
        data = packet.data
        for first, start, _ in _mqtt_packets(data):
            stamp = _stamp_of(data, first, start)
            if stamp is None or stamp[0]:
                continue
            key = stamp[1], stamp[2]
            if inbound:
                published.setdefault(key, packet.time_ns)
            elif key in published:
                client = (packet.destination, packet.destination_port)
                done.append(Exchange(client, published[key], packet.time_ns))
    done.sort(key=lambda exchange: exchange.sent_ns)
    return done


def mqtt_delivered(packets: Iterable[Packet], port: int, offset_ns: int) -> list[Exchange]:
    """Stamped messages from the send time in their payload (the publisher's
    ``CLOCK_MONOTONIC``, moved to the wire's clock by ``offset_ns``: ``CLOCK_REALTIME`` minus
    it) to the broker's PUBLISH of them to each subscriber (the exchange's client)."""
    done: list[Exchange] = []
    for packet in packets:
        if packet.protocol != TCP or not packet.payload or packet.source_port != port:
            continue
        data = packet.data
        for first, start, _ in _mqtt_packets(data):
            stamp = _stamp_of(data, first, start)
            if stamp is not None and not stamp[0]:
                client = (packet.destination, packet.destination_port)
                done.append(Exchange(client, stamp[3] + offset_ns, packet.time_ns))
    done.sort(key=lambda exchange: exchange.sent_ns)
    return done


_BVLC = 0x81
_CONFIRMED_REQUEST = 0
_REPLIES = frozenset({2, 3, 5, 6, 7})
"""SimpleACK, ComplexACK, Error, Reject, Abort."""
_SEGMENTED = 0x08
_MORE_FOLLOWS = 0x04
_NETWORK_MESSAGE = 0x80
_HAS_DNET = 0x20
_HAS_SNET = 0x08


def _apdu_at(data: bytes) -> int:
    """Where the APDU of a BACnet/IP datagram starts (-1: not an APDU, or not captured)."""
    if len(data) < 6 or data[0] != _BVLC or data[4] != 1:
        return -1
    control = data[5]
    if control & _NETWORK_MESSAGE:
        return -1
    at = 6
    for flag in (_HAS_DNET, _HAS_SNET):
        if control & flag:
            if at + 3 > len(data):
                return -1
            at += 3 + data[at + 2]
    if control & _HAS_DNET:
        at += 1  # the hop count
    return at if at + 3 <= len(data) else -1


def bacnet_ip(packets: Iterable[Packet], port: int) -> list[Exchange]:
    """Confirmed requests to their replies by client and invoke ID (see the module's
    docstring)."""
    pending: dict[tuple[str, int, int], int] = {}
    done: list[Exchange] = []
    for packet in packets:
        if packet.protocol != UDP:
            continue
        data = packet.data
        at = _apdu_at(data)
        if at < 0:
            continue
        kind = data[at] >> 4
        if packet.destination_port == port and kind == _CONFIRMED_REQUEST:
            key = (packet.source, packet.source_port, data[at + 2])
            pending.setdefault(key, packet.time_ns)  # a resend keeps the first send
        elif packet.source_port == port and kind in _REPLIES:
            if data[at] & _SEGMENTED and data[at] & _MORE_FOLLOWS:
                continue  # not the reply's last segment
            key = (packet.destination, packet.destination_port, data[at + 1])
            sent = pending.pop(key, None)
            if sent is not None:
                done.append(Exchange(key[:2], sent, packet.time_ns))
    done.sort(key=lambda exchange: exchange.sent_ns)
    return done


PAIRERS: dict[str, Pairer] = {
    "http": http,
    "websocket": websocket,
    "mqtt": mqtt,
    "mqtt-one-way": mqtt_one_way,
    "bacnet-ip": bacnet_ip,
}
"""The pairer of each protocol (see the module's docstring)."""
