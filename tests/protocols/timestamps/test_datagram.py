"""Kernel timestamps on a connected UDP socket (BACnet/IP's lanes), on real loopback sockets:
a reply's time is its datagram's arrival, a request's the kernel's send of its own datagram;
a lazy reactor reads every waiting datagram when polled; a socket the kernel gives no stamps
for leaves the times to the engine and says so."""

from __future__ import annotations

import asyncio
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvloop

from protobench.protocols.timestamps.clock import SO_TIMESTAMPING, Stamps, probe
from protobench.protocols.timestamps.datagram import StampedDatagram
from protobench.protocols.timestamps.reactor import Reactor

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not probe().receive, reason=f"no kernel timestamps here: {probe().reason}"),
]
MS = 1_000_000


@contextmanager
def _echo_server(replies: int) -> Iterator[tuple[str, int]]:
    """A UDP server on loopback echoing ``replies`` datagrams (then it stops)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.settimeout(10.0)

    def echo() -> None:
        for _ in range(replies):
            try:
                data, peer = server.recvfrom(2048)
            except OSError:
                return
            server.sendto(data, peer)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    try:
        yield server.getsockname()
    finally:
        thread.join(10)
        server.close()


def _client(address: tuple[str, int], kind: type[socket.socket] = socket.socket) -> socket.socket:
    sock = kind(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(address)
    sock.setblocking(False)
    return sock


def test_a_reply_is_its_datagram_s_arrival_and_a_request_its_own_send() -> None:
    """A lazy reactor leaves the reply in the socket for 50 ms: its stamp is still the
    datagram's arrival, and the request's stamp falls inside its own send call."""

    async def main() -> None:
        with _echo_server(1) as address:
            reactor = Reactor()
            reactor.set_lazy(True)
            stamps = Stamps()
            handed: list[tuple[bytes, int, int]] = []
            sock = _client(address)
            lane = StampedDatagram(
                sock,
                reactor,
                stamps,
                lambda data: handed.append((data, stamps.received, time.perf_counter_ns())),
                lambda exc: pytest.fail(f"read failed: {exc}"),
                2048,
            )
            assert stamps.kernel_receive
            before = time.perf_counter_ns()
            lane.send_request(b"ping")
            after = time.perf_counter_ns()
            readable = select.select([sock], [], [], 5.0)[0]
            seen = time.perf_counter_ns()
            assert readable, "no reply within 5 s"
            await asyncio.sleep(0.05)
            assert handed == []  # lazy: nothing read before the poll
            reactor.poll()
            lane.close()
            reactor.close()
        ((data, received, taken),) = handed
        assert data == b"ping"
        if stamps.kernel_send:
            assert before <= stamps.sent <= after
        assert stamps.sent <= received <= seen
        assert taken - received >= 48 * MS  # libuv's timers count whole ms: one may fire early

    uvloop.run(main())


def test_a_lazy_poll_reads_every_datagram_waiting() -> None:
    """Each poll leaves the socket empty (an eager read takes one datagram per wake-up)."""

    async def main() -> None:
        with _echo_server(3) as address:
            reactor = Reactor()
            reactor.set_lazy(True)
            handed: list[bytes] = []
            sock = _client(address)
            lane = StampedDatagram(
                sock, reactor, Stamps(), handed.append, lambda exc: pytest.fail(str(exc)), 2048
            )
            for n in range(3):
                lane.send_request(b"%d" % n)
            deadline = time.monotonic() + 10.0
            while len(handed) < 3 and time.monotonic() < deadline:
                if select.select([sock], [], [], 0.5)[0]:
                    await asyncio.sleep(0.02)  # the next replies, if the server is quick
                    reactor.poll()
                    assert not select.select([sock], [], [], 0)[0], handed
            lane.close()
            reactor.close()
        assert handed == [b"0", b"1", b"2"]

    uvloop.run(main())


class _Refusing(socket.socket):
    """A socket whose kernel refuses timestamping (an old or foreign kernel: it cannot be
    produced on this one)."""

    def setsockopt(self, level: int, option: int, value: object, *rest: object) -> None:
        if level == socket.SOL_SOCKET and option == SO_TIMESTAMPING:
            raise OSError(92, "Protocol not available")
        super().setsockopt(level, option, value, *rest)  # type: ignore[call-overload]


def test_a_socket_without_stamps_leaves_the_times_to_the_engine() -> None:
    """Neither stamp: the session says it has the user clock (the report's notice counts
    it) and a reply's ``received`` is 0, so the engine takes its own time."""

    async def main() -> None:
        with _echo_server(1) as address:
            reactor = Reactor()
            stamps = Stamps()
            handed: list[int] = []
            sock = _client(address, _Refusing)
            lane = StampedDatagram(
                sock,
                reactor,
                stamps,
                lambda data: handed.append(stamps.received),
                lambda exc: pytest.fail(str(exc)),
                2048,
            )
            assert (stamps.kernel_receive, stamps.kernel_send) == (False, False)
            before = time.perf_counter_ns()
            lane.send_request(b"ping")
            assert before <= stamps.sent <= time.perf_counter_ns()  # the user-space time
            assert select.select([sock], [], [], 5.0)[0], "no reply within 5 s"
            reactor.poll()
            lane.close()
            reactor.close()
        assert handed == [0]

    uvloop.run(main())
