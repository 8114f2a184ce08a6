"""The kernel's timestamps on real loopback sockets: a reply's time is its packet's arrival,
a request's the kernel's send; lazy reactors read only when polled; writes the socket cannot
take at once are kept and sent in order."""

from __future__ import annotations

import asyncio
import select
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import uvloop

from protobench.protocols.timestamps.clock import WALL, Stamps, probe
from protobench.protocols.timestamps.reactor import Reactor
from protobench.protocols.timestamps.transport import StampedTransport, open_stamped

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not probe().receive, reason=f"no kernel timestamps here: {probe().reason}"),
]
MS = 1_000_000


class _Client(asyncio.Protocol):
    """Keeps what arrives, when it was handed over, and the stamp it came with."""

    def __init__(self, stamps: Stamps) -> None:
        self.stamps = stamps
        self.data = bytearray()
        self.handed: list[tuple[int, int]] = []
        """(the receive stamp, the engine's time) of each ``data_received``."""
        self.paused = 0
        self.resumed = 0
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.data += data
        self.handed.append((self.stamps.received, time.perf_counter_ns()))

    def pause_writing(self) -> None:
        self.paused += 1

    def resume_writing(self) -> None:
        self.resumed += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)


@asynccontextmanager
async def _server(
    on_data: Callable[[asyncio.Transport, bytes], None],
) -> AsyncIterator[tuple[str, int]]:
    class Server(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            on_data(self.transport, data)  # type: ignore[arg-type]

    server = await asyncio.get_running_loop().create_server(Server, "127.0.0.1", 0)
    try:
        yield "127.0.0.1", server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def _open(
    address: tuple[str, int], reactor: Reactor
) -> tuple[StampedTransport, _Client, Stamps]:
    stamps = Stamps()
    transport, client = await open_stamped(
        lambda: _Client(stamps), *address, reactor=reactor, stamps=stamps
    )
    assert isinstance(client, _Client)
    return transport, client, stamps


def _echo(transport: asyncio.Transport, data: bytes) -> None:
    transport.write(data)


def test_a_reply_is_timed_when_its_packet_arrived_not_when_it_was_read() -> None:
    """A lazy reactor leaves the reply in the socket for 50 ms: its stamp is still the
    packet's arrival (before the socket was seen readable), 50 ms before it was read."""
    listener = socket.create_server(("127.0.0.1", 0))

    def echo_once() -> None:
        peer, _ = listener.accept()
        with peer:
            peer.sendall(peer.recv(100))
            peer.recv(100)  # until the client closes

    server = threading.Thread(target=echo_once, daemon=True)
    server.start()

    async def main() -> None:
        reactor = Reactor()
        reactor.set_lazy(True)
        transport, client, stamps = await _open(listener.getsockname(), reactor)
        sock = transport.get_extra_info("socket")
        transport.write_request(b"ping")
        readable = select.select([sock], [], [], 5.0)[0]
        seen = time.perf_counter_ns()
        assert readable, "no reply within 5 s"
        await asyncio.sleep(0.05)
        assert client.handed == []  # lazy: nothing read before the poll
        reactor.poll()
        transport.close()
        await client.lost
        reactor.close()
        ((received, handed),) = client.handed
        assert stamps.sent <= received <= seen
        assert handed - received >= 48 * MS  # libuv's timers count whole ms: one may fire early

    try:
        uvloop.run(main())
    finally:
        server.join(5)
        listener.close()


def test_a_request_is_timed_by_the_kernel_s_send_stamp_of_its_own_packet() -> None:
    """Each request's send stamp falls within its own ``write_request`` call (on loopback
    the kernel stamps it inside the send), not on an earlier request 20 ms before."""

    async def main() -> None:
        reactor = Reactor()
        async with _server(_echo) as address:
            transport, client, stamps = await _open(address, reactor)
            if not stamps.kernel_send:
                pytest.skip("the kernel gives no send timestamps here")
            for size in (10, 700, 10):
                await asyncio.sleep(0.02)
                before = time.perf_counter_ns()
                transport.write_request(b"x" * size)
                after = time.perf_counter_ns()
                slack = MS // 10  # the wall clock's offset is measured, not exact
                assert before - slack <= stamps.sent <= after + slack, (before, stamps.sent, after)
            transport.close()
            await client.lost
        reactor.close()

    uvloop.run(main())


def test_an_eager_reactor_reads_on_arrival_and_a_lazy_one_when_polled() -> None:
    async def main() -> None:
        reactor = Reactor()
        async with _server(_echo) as address:
            transport, client, _ = await _open(address, reactor)
            transport.write_request(b"one")
            for _ in range(500):
                if client.data:
                    break
                await asyncio.sleep(0.01)
            assert bytes(client.data) == b"one"
            reactor.set_lazy(True)
            transport.write_request(b"two")
            await asyncio.sleep(0.1)
            assert bytes(client.data) == b"one"
            assert reactor.poll() == 1
            assert bytes(client.data) == b"onetwo"
            transport.close()
            assert not client.lost.done()  # connection_lost comes soon, not from close()
            await client.lost
        reactor.close()

    uvloop.run(main())


def test_requests_written_by_reply_handlers_leave_together_after_the_poll() -> None:
    """Two replies read in one poll: the request the first handler defers is sent only once
    the second handler (2 ms later) has run, stamped at its own send, and a plain write
    after it still follows it on the wire."""

    class Again(_Client):
        def __init__(self, stamps: Stamps) -> None:
            super().__init__(stamps)
            self.transport: StampedTransport | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, StampedTransport)
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if bytes(self.data) == b"ping":
                assert self.transport is not None
                self.transport.defer_request(b"again")
                self.transport.write(b"+")
                time.sleep(0.002)

    async def main() -> None:
        reactor = Reactor()
        reactor.set_lazy(True)
        async with _server(_echo) as address:
            opened = []
            for _ in range(2):
                stamps = Stamps()
                transport, client = await open_stamped(
                    lambda stamps=stamps: Again(stamps), *address, reactor=reactor, stamps=stamps
                )
                assert isinstance(client, Again)
                opened.append((transport, client, stamps))
            for transport, _, _ in opened:
                transport.write_request(b"ping")
            await asyncio.sleep(0.1)
            assert reactor.poll() == 2
            last_handled = max(client.handed[0][1] for _, client, _ in opened)
            slack = MS // 10  # the wall clock's offset is measured, not exact
            for _, _, stamps in opened:
                assert stamps.sent >= last_handled - slack
            await asyncio.sleep(0.1)
            reactor.poll()
            for transport, client, _ in opened:
                assert bytes(client.data) == b"pingagain+"
                transport.close()
                await client.lost
        reactor.close()

    uvloop.run(main())


def test_a_write_the_socket_cannot_take_is_kept_and_sent_in_order() -> None:
    """16 MB to a server that reads nothing for 0.2 s: the transport pauses the writer,
    keeps the rest, and every byte arrives in order once the server reads."""
    payload = bytes(range(256)) * (16 * 4096)
    received = bytearray()
    done = asyncio.Event

    async def main() -> None:
        finished = done()
        server_sock = socket.create_server(("127.0.0.1", 0))
        server_sock.setblocking(False)
        loop = asyncio.get_running_loop()
        reactor = Reactor()
        transport, client, _ = await _open(server_sock.getsockname(), reactor)
        peer, _ = await loop.sock_accept(server_sock)
        transport.write(payload)
        assert transport.get_write_buffer_size() > 0
        assert client.paused == 1
        await asyncio.sleep(0.2)

        async def drain() -> None:
            while len(received) < len(payload):
                received.extend(await loop.sock_recv(peer, 1 << 20))
            finished.set()

        reader = asyncio.create_task(drain())
        await asyncio.wait_for(finished.wait(), 30)
        await reader
        assert transport.get_write_buffer_size() == 0
        assert client.resumed == 1
        transport.close()
        await client.lost
        peer.close()
        server_sock.close()
        reactor.close()

    uvloop.run(main())
    assert bytes(received) == payload


def test_a_reset_connection_is_lost_with_its_error() -> None:
    def reset(transport: asyncio.Transport, data: bytes) -> None:
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        transport.abort()

    async def main() -> Exception | None:
        reactor = Reactor()
        async with _server(reset) as address:
            transport, client, _ = await _open(address, reactor)
            transport.write_request(b"hello")
            lost = await asyncio.wait_for(client.lost, 10)
        assert transport.is_closing()
        reactor.close()
        return lost

    assert isinstance(uvloop.run(main()), ConnectionError)


def test_the_wall_clock_offset_converts_a_stamp_to_the_engine_clock() -> None:
    WALL.resync()
    engine = time.perf_counter_ns()
    converted = WALL.to_engine(time.time_ns())
    assert abs(converted - engine) < 10 * MS
