"""Requests paired with their replies from captured packets: the wire's latency of each exchange.

A pairer takes the packets of a capture (in capture order) and the server's
port, and returns the exchanges it can pair: when the request's first packet
and the reply's last packet were on the wire. :data:`PAIRERS` names them by
protocol:

* ``http``: HTTP/1.1 with one request in flight per TCP connection (no
  pipelining: protobench, wrk, wrk2): per connection, a request begins with
  the first client packet carrying data after a reply, and its reply ends with
  the server's last data packet before the next request.

A protocol adds its own here: BACnet/IP pairs a confirmed request with its
reply (ComplexACK, SimpleACK, Error, Reject, Abort) by the client's address and
the APDU's invoke ID, from the UDP payload in :attr:`~.pcap.Packet.data` (a
capture needs the snapshot length to reach the APDU's header).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from protobench.wiretruth.pcap import TCP, Packet


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


def http(packets: Iterable[Packet], port: int) -> list[Exchange]:
    """HTTP/1.1 exchanges, one in flight per connection (see the module's docstring)."""
    open_: dict[tuple[str, int], list[int]] = {}
    """Per client: [the request's first packet, the reply's last packet so far (0: none yet)]."""
    done: list[Exchange] = []
    for packet in packets:
        if packet.protocol != TCP or not packet.payload:
            continue
        if packet.destination_port == port:
            client = (packet.source, packet.source_port)
            state = open_.get(client)
            if state is None:
                open_[client] = [packet.time_ns, 0]
            elif state[1]:
                done.append(Exchange(client, state[0], state[1]))
                state[0], state[1] = packet.time_ns, 0
        elif packet.source_port == port:
            state = open_.get((packet.destination, packet.destination_port))
            if state is not None:
                state[1] = packet.time_ns
    done.extend(Exchange(client, s[0], s[1]) for client, s in open_.items() if s[1])
    done.sort(key=lambda exchange: exchange.sent_ns)
    return done


PAIRERS: dict[str, Pairer] = {"http": http}
"""The pairer of each protocol (see the module's docstring for BACnet/IP's)."""
