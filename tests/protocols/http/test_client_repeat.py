"""The HTTP client's repeat fast path: a read equal to the last whole response skips llhttp.

The connection runs on a real socket pair; the test writes the server's bytes
read by read (waiting for each to be consumed), so read boundaries are the
writes. A counting wrapper around the fast parser shows when llhttp was fed.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httptools
import pytest

from protobench.protocols.http.client import HttpConnection, parse_url
from protobench.vocab.errors import ErrorClass, OpError

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
CLOSE = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
REQUEST = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"

pytestmark = pytest.mark.anyio

type Outcome = tuple[ErrorClass | None, str, int]


class CountingParser:
    """The real parser, counting the reads fed to it."""

    def __init__(self, parser: httptools.HttpResponseParser) -> None:
        self.parser = parser
        self.feeds = 0

    def feed_data(self, data: bytes) -> None:
        self.feeds += 1
        self.parser.feed_data(data)

    def get_status_code(self) -> int:
        return int(self.parser.get_status_code())

    def should_keep_alive(self) -> bool:
        return bool(self.parser.should_keep_alive())


class Harness:
    """A client connection and the server end of its socket pair."""

    def __init__(self, conn: HttpConnection, server: socket.socket) -> None:
        self.conn = conn
        self.server = server
        self.counter = CountingParser(conn._fast_parser)
        conn._fast_parser = conn._parser = self.counter  # type: ignore[assignment]
        self.outcomes: list[Outcome] = []

    def done(self, error: OpError | None, nbytes: int) -> None:
        if error is None:
            self.outcomes.append((None, "", nbytes))
        else:
            self.outcomes.append((error.error_class, error.code or "", nbytes))

    async def exchange(self, *reads: bytes) -> list[Outcome]:
        """Submit one request; the server answers with ``reads``, one socket write each."""
        before = len(self.outcomes)
        self.conn.submit(REQUEST, self.done)
        loop = asyncio.get_running_loop()
        assert await loop.sock_recv(self.server, 4096) == REQUEST
        for chunk in reads:
            await loop.sock_sendall(self.server, chunk)
            await asyncio.sleep(0.02)
        return self.outcomes[before:]


@asynccontextmanager
async def harness() -> AsyncIterator[Harness]:
    client_sock, server_sock = socket.socketpair()
    server_sock.setblocking(False)
    loop = asyncio.get_running_loop()
    endpoint = parse_url("http://127.0.0.1:1/")
    _, conn = await loop.create_connection(
        lambda: HttpConnection(loop, endpoint, 5.0), sock=client_sock
    )
    try:
        yield Harness(conn, server_sock)
    finally:
        conn.close()
        server_sock.close()


async def test_a_repeated_response_completes_without_the_parser() -> None:
    async with harness() as h:
        for _ in range(3):
            assert await h.exchange(OK) == [(None, "", len(OK))]
        assert h.counter.feeds == 1


async def test_a_different_status_between_repeats_keeps_each_outcome_right() -> None:
    async with harness() as h:
        await h.exchange(OK)
        assert await h.exchange(BUSY) == [(ErrorClass.PROTOCOL, "503", len(BUSY))]
        assert await h.exchange(OK) == [(None, "", len(OK))]
        assert await h.exchange(BUSY) == [(ErrorClass.PROTOCOL, "503", len(BUSY))]
        assert h.counter.feeds == 4  # one response is remembered: each change is parsed
        assert await h.exchange(BUSY) == [(ErrorClass.PROTOCOL, "503", len(BUSY))]
        assert h.counter.feeds == 4


async def test_a_split_response_is_not_learned() -> None:
    head, tail = OK[:20], OK[20:]
    async with harness() as h:
        assert await h.exchange(head, tail) == [(None, "", len(OK))]
        assert await h.exchange(head, tail) == [(None, "", len(OK))]
        assert h.counter.feeds == 4
        # the first half alone is not a response: no completion until the rest comes
        assert await h.exchange(head) == []
        assert h.outcomes[-1] == (None, "", len(OK))


async def test_an_interim_response_is_not_learned() -> None:
    async with harness() as h:
        assert await h.exchange(CONTINUE, OK) == [(None, "", len(CONTINUE) + len(OK))]
        assert await h.exchange(CONTINUE) == []
        assert await h.exchange(OK) == [(None, "", len(CONTINUE) + len(OK))]


async def test_a_closing_response_is_not_learned() -> None:
    async with harness() as h:
        assert await h.exchange(CLOSE) == [(None, "", len(CLOSE))]
        assert not h.conn.alive
        assert h.conn._repeat == b""


async def test_a_response_with_no_request_in_flight_is_still_a_protocol_failure() -> None:
    async with harness() as h:
        await h.exchange(OK)
        await asyncio.get_running_loop().sock_sendall(h.server, OK)
        await asyncio.sleep(0.02)
        assert not h.conn.alive
        h.conn.submit(REQUEST, h.done)
        await asyncio.sleep(0.02)
        assert h.outcomes[-1][0] is ErrorClass.CLOSED
