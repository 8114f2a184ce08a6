"""Responses whose body ends when the server closes (RFC 9112 section 6.3, rule 8).

Each case runs the client on a real socket pair: the server end writes the
response read by read, then shuts its side down. A close-delimited body is a
whole response (on both the submit and the fetch path); a body cut short of
its ``Content-Length`` or last chunk is still ``closed``.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from protobench.protocols.http.client import (
    Response,
    body_ends_at_close,
    close_delimited_status,
)
from protobench.vocab.errors import ErrorClass, OpError
from tests.protocols.http.test_client_repeat import CONTINUE, REQUEST, Harness, harness

pytestmark = pytest.mark.anyio

UNTIL_CLOSE = b"HTTP/1.1 200 OK\r\nServer: raw\r\nContent-Type: text/plain\r\n\r\n"
HTTP10 = b"HTTP/1.0 200 OK\r\nServer: raw\r\n\r\n"


@pytest.mark.parametrize(
    ("status", "headers", "until_close"),
    [
        (200, [], True),
        (200, [(b"server", b"x")], True),
        (200, [(b"content-length", b"5")], False),
        (200, [(b"transfer-encoding", b"chunked")], False),
        (200, [(b"transfer-encoding", b"gzip, Chunked ")], False),
        (200, [(b"transfer-encoding", b"gzip")], True),
        (404, [], True),
        (204, [], False),
        (304, [], False),
        (101, [], False),
    ],
)
def test_body_ends_at_close_follows_rfc9112(
    status: int, headers: list[tuple[bytes, bytes]], until_close: bool
) -> None:
    assert body_ends_at_close(status, headers) is until_close


def test_close_delimited_status_reads_the_last_head() -> None:
    assert close_delimited_status(UNTIL_CLOSE + b"body") == 200
    assert close_delimited_status(CONTINUE + UNTIL_CLOSE) == 200
    assert close_delimited_status(UNTIL_CLOSE[:-2]) == 0  # head not complete
    assert close_delimited_status(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc") == 0
    assert close_delimited_status(b"NOT HTTP\r\n\r\n") == 0


async def _submit_then_close(h: Harness, *reads: bytes) -> tuple[OpError | None, int]:
    """Submit one request; the server writes ``reads`` then shuts its side down."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[tuple[OpError | None, int]] = loop.create_future()
    h.conn.submit(REQUEST, lambda error, nbytes: result.set_result((error, nbytes)))
    assert await loop.sock_recv(h.server, 4096) == REQUEST
    for chunk in reads:
        await loop.sock_sendall(h.server, chunk)
        await asyncio.sleep(0.02)
    assert not result.done()
    h.server.shutdown(socket.SHUT_WR)
    return await asyncio.wait_for(result, 5)


async def _fetch_then_close(h: Harness, *reads: bytes) -> Response:
    loop = asyncio.get_running_loop()
    pending = asyncio.ensure_future(h.conn.fetch(REQUEST))
    assert await loop.sock_recv(h.server, 4096) == REQUEST
    for chunk in reads:
        await loop.sock_sendall(h.server, chunk)
        await asyncio.sleep(0.02)
    assert not pending.done()
    h.server.shutdown(socket.SHUT_WR)
    return await asyncio.wait_for(pending, 5)


@pytest.mark.parametrize(
    "reads",
    [
        (UNTIL_CLOSE + b"hello",),
        (UNTIL_CLOSE[:20], UNTIL_CLOSE[20:], b"hel", b"lo"),
        (UNTIL_CLOSE,),
        (HTTP10 + b"hello",),
        (CONTINUE, UNTIL_CLOSE + b"hello"),
        (CONTINUE + UNTIL_CLOSE, b"hello"),
    ],
    ids=["one-read", "split-head-and-body", "empty-body", "http-1.0", "continue", "continue-1"],
)
async def test_submit_completes_a_close_delimited_response_at_eof(reads: tuple[bytes, ...]) -> None:
    async with harness() as h:
        error, nbytes = await _submit_then_close(h, *reads)
        assert error is None
        assert nbytes == sum(len(r) for r in reads)
        assert not h.conn.alive


async def test_a_close_delimited_error_status_keeps_its_code() -> None:
    async with harness() as h:
        error, _ = await _submit_then_close(h, b"HTTP/1.1 503 Busy\r\n\r\ntry later")
        assert error is not None
        assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, "503")


@pytest.mark.parametrize(
    "reads",
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nhello",),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",),
        (UNTIL_CLOSE[:-2],),
    ],
    ids=["short-content-length", "short-http-1.0", "unfinished-chunks", "unfinished-head"],
)
async def test_a_body_cut_short_is_still_closed(reads: tuple[bytes, ...]) -> None:
    async with harness() as h:
        error, nbytes = await _submit_then_close(h, *reads)
        assert error is not None
        assert error.error_class is ErrorClass.CLOSED
        assert nbytes == 0
    async with harness() as h:
        with pytest.raises(OpError) as caught:
            await _fetch_then_close(h, *reads)
        assert caught.value.error_class is ErrorClass.CLOSED


async def test_fetch_returns_a_close_delimited_body() -> None:
    async with harness() as h:
        response = await _fetch_then_close(h, UNTIL_CLOSE + b"hel", b"lo")
        assert (response.status, response.body) == (200, b"hello")
        assert response.header("server") == b"raw"
        assert response.nbytes == len(UNTIL_CLOSE) + 5
        assert not h.conn.alive
