"""Packets from a pcap file: time, addresses, ports and payload length (IPv4/IPv6, TCP/UDP).

Reads the classic pcap format in either byte order, with microsecond or
nanosecond timestamps (``tcpdump --time-stamp-precision=nano``), on Ethernet
(Linux loopback), Linux cooked (``any``: SLL and SLL2) and BSD loopback links.
Only the headers are needed, so a short snapshot length (``-s 128``) suffices: the
payload's length comes from the IP header, not from the bytes captured. Other
packets (ARP, ICMP, fragments beyond the first) are skipped.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from protobench.vocab.exceptions import BadInput

TCP = 6
UDP = 17
_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
"""The file's magic: its byte order and how many nanoseconds a fraction of a second is."""
_ETHERNET, _BSD_LOOPBACK, _SLL, _SLL2 = 1, 0, 113, 276
_IPV4, _IPV6 = 0x0800, 0x86DD


class PcapError(BadInput, ValueError):
    """A file that is not a pcap this module reads: one line saying why."""


@dataclass(frozen=True, slots=True)
class Packet:
    """One captured IP packet: when (ns since the epoch), from where to where, what it carries.

    ``flags`` are TCP's (0 for UDP); ``payload`` is the length of the TCP or
    UDP payload; ``data`` the captured start of that payload (may be cut short).
    """

    time_ns: int
    protocol: int
    source: str
    source_port: int
    destination: str
    destination_port: int
    payload: int
    flags: int = 0
    seq: int = 0
    data: bytes = b""


def read(path: Path) -> Iterator[Packet]:
    """The IP packets of the pcap file at ``path``, in capture order."""
    with path.open("rb") as handle:
        header = handle.read(24)
        if len(header) < 24 or header[:4] not in _MAGICS:
            raise PcapError(f"{path}: not a pcap file (bad magic)")
        order, scale = _MAGICS[header[:4]]
        link = struct.unpack(order + "I", header[20:24])[0] & 0x0FFFFFFF
        record = struct.Struct(order + "IIII")
        while True:
            head = handle.read(16)
            if len(head) < 16:
                return
            seconds, fraction, captured, _ = record.unpack(head)
            frame = handle.read(captured)
            if len(frame) < captured:
                return  # cut short by a capture that was stopped while writing
            packet = _decode(link, frame, seconds * 1_000_000_000 + fraction * scale)
            if packet is not None:
                yield packet


def _decode(link: int, frame: bytes, time_ns: int) -> Packet | None:
    if link == _ETHERNET:
        offset, ethertype = 14, int.from_bytes(frame[12:14], "big")
        if ethertype == 0x8100:  # one VLAN tag
            offset, ethertype = 18, int.from_bytes(frame[16:18], "big")
    elif link == _SLL:
        offset, ethertype = 16, int.from_bytes(frame[14:16], "big")
    elif link == _SLL2:
        offset, ethertype = 20, int.from_bytes(frame[0:2], "big")
    elif link == _BSD_LOOPBACK:
        family = int.from_bytes(frame[0:4], "little")
        offset, ethertype = 4, _IPV4 if family == socket.AF_INET else _IPV6
    else:
        raise PcapError(f"link type {link} is not read (Ethernet, Linux cooked, BSD loopback)")
    if ethertype == _IPV4:
        return _ipv4(frame, offset, time_ns)
    if ethertype == _IPV6:
        return _ipv6(frame, offset, time_ns)
    return None


def _ipv4(frame: bytes, at: int, time_ns: int) -> Packet | None:
    if len(frame) < at + 20:
        return None
    header = (frame[at] & 0x0F) * 4
    total = int.from_bytes(frame[at + 2 : at + 4], "big")
    if int.from_bytes(frame[at + 6 : at + 8], "big") & 0x1FFF:
        return None  # a later fragment: no transport header
    source = socket.inet_ntop(socket.AF_INET, frame[at + 12 : at + 16])
    destination = socket.inet_ntop(socket.AF_INET, frame[at + 16 : at + 20])
    return _transport(
        frame, at + header, total - header, frame[at + 9], source, destination, time_ns
    )


def _ipv6(frame: bytes, at: int, time_ns: int) -> Packet | None:
    if len(frame) < at + 40:
        return None
    length = int.from_bytes(frame[at + 4 : at + 6], "big")
    source = socket.inet_ntop(socket.AF_INET6, frame[at + 8 : at + 24])
    destination = socket.inet_ntop(socket.AF_INET6, frame[at + 24 : at + 40])
    return _transport(frame, at + 40, length, frame[at + 6], source, destination, time_ns)


def _transport(
    frame: bytes, at: int, length: int, protocol: int, source: str, destination: str, time_ns: int
) -> Packet | None:
    if protocol == TCP and len(frame) >= at + 20:
        header = (frame[at + 12] >> 4) * 4
        return Packet(
            time_ns,
            TCP,
            source,
            int.from_bytes(frame[at : at + 2], "big"),
            destination,
            int.from_bytes(frame[at + 2 : at + 4], "big"),
            max(0, length - header),
            frame[at + 13],
            int.from_bytes(frame[at + 4 : at + 8], "big"),
            frame[at + header :],
        )
    if protocol == UDP and len(frame) >= at + 8:
        return Packet(
            time_ns,
            UDP,
            source,
            int.from_bytes(frame[at : at + 2], "big"),
            destination,
            int.from_bytes(frame[at + 2 : at + 4], "big"),
            max(0, length - 8),
            data=frame[at + 8 :],
        )
    return None
