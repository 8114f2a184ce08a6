"""Pairing a capture's HTTP requests with their replies, from a pcap file written here.

The packets are Ethernet/IPv4/TCP frames as tcpdump writes them from loopback
(nanosecond timestamps): two connections interleaved, a reply in two segments, a
request in two, and bare acknowledgements between them, which carry no payload.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest

from protobench.wiretruth import pairing, pcap

SERVER = 8080
NS_MAGIC = b"\x4d\x3c\xb2\xa1"  # little-endian, nanosecond timestamps


def _frame(source_port: int, destination_port: int, payload: int, flags: int = 0x18) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", source_port, destination_port, 1, 1, 5 << 4, flags, 512, 0, 0)
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45, 0, 20 + len(tcp) + payload, 0, 0, 64, socket.IPPROTO_TCP, 0,
        socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"),
    )  # fmt: skip
    return bytes(12) + b"\x08\x00" + ip + tcp + b"x" * min(payload, 16)


def _write(path: Path, packets: list[tuple[int, bytes]]) -> None:
    with path.open("wb") as out:
        out.write(NS_MAGIC + struct.pack("<HHiIII", 2, 4, 0, 0, 256, 1))
        for time_ns, frame in packets:
            seconds, nanos = divmod(time_ns, 1_000_000_000)
            out.write(struct.pack("<IIII", seconds, nanos, len(frame), len(frame)) + frame)


def test_each_request_is_paired_with_its_reply_per_connection(tmp_path: Path) -> None:
    a, b = 40001, 40002
    path = tmp_path / "wire.pcap"
    _write(
        path,
        [
            (1_000, _frame(a, SERVER, 0, flags=0x02)),  # a's SYN: no payload
            (10_000, _frame(a, SERVER, 79)),  # a: request 1
            (12_000, _frame(b, SERVER, 79)),  # b: request 1
            (13_000, _frame(SERVER, a, 0, flags=0x10)),  # an ack
            (25_000, _frame(SERVER, a, 100)),  # a: reply 1, first segment
            (27_000, _frame(SERVER, a, 60)),  # a: reply 1, last segment
            (30_000, _frame(SERVER, b, 160)),  # b: reply 1
            (40_000, _frame(a, SERVER, 40)),  # a: request 2, first segment
            (41_000, _frame(a, SERVER, 39)),  # a: request 2, the rest
            (55_000, _frame(SERVER, a, 160)),  # a: reply 2
            (60_000, _frame(b, SERVER, 79)),  # b: request 2, never answered
        ],
    )
    exchanges = pairing.http(pcap.read(path), SERVER)
    assert [(e.client[1], e.sent_ns, e.answered_ns) for e in exchanges] == [
        (a, 10_000, 27_000),
        (b, 12_000, 30_000),
        (a, 40_000, 55_000),
    ]
    assert [e.latency_ns for e in exchanges] == [17_000, 18_000, 15_000]
    assert pairing.PAIRERS["http"] is pairing.http


def test_a_file_that_is_not_a_pcap_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "not.pcap"
    path.write_bytes(b"GET / HTTP/1.1\r\n\r\n" * 4)
    with pytest.raises(pcap.PcapError, match="not a pcap file"):
        list(pcap.read(path))


def test_a_capture_cut_short_ends_at_its_last_whole_packet(tmp_path: Path) -> None:
    path = tmp_path / "cut.pcap"
    _write(path, [(10_000, _frame(40001, SERVER, 79)), (20_000, _frame(SERVER, 40001, 160))])
    path.write_bytes(path.read_bytes()[:-10])  # tcpdump stopped while writing
    packets = list(pcap.read(path))
    assert [(p.time_ns, p.payload) for p in packets] == [(10_000, 79)]
