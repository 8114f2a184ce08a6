"""The HTTP client's bounds against hostile servers on loopback: a response head over
``max_head`` and a kept body over ``max_body`` are ``protocol`` errors that close the
connection, refused as soon as they are over (an endless head or body is never held)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from protobench.protocols.http.client import (
    MAX_BODY,
    MAX_HEAD,
    HttpConnection,
    build_request,
    parse_url,
)
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.http import UVLOOP_BACKEND, raw_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MiB = 1024 * 1024


@pytest.fixture
def anyio_backend() -> object:
    return UVLOOP_BACKEND


class Streamed:
    """What a streaming server wrote before the client went away."""

    def __init__(self) -> None:
        self.sent = 0


@asynccontextmanager
async def streaming_server(
    head: bytes, chunk: bytes, budget: int
) -> AsyncIterator[tuple[str, Streamed]]:
    """Answers every request with ``head`` then ``chunk`` again and again, up to ``budget``
    bytes in all, as fast as the client reads (flow control), then closes."""
    streamed = Streamed()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(head)
            streamed.sent += len(head)
            while streamed.sent < budget:
                writer.write(chunk)
                streamed.sent += len(chunk)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", streamed
    finally:
        server.close()


async def _connect(url: str, **limits: int) -> HttpConnection:
    return await HttpConnection.connect(parse_url(url), ssl=None, timeout=30.0, **limits)


async def _submit(conn: HttpConnection, url: str) -> OpError | None:
    done: asyncio.Future[OpError | None] = asyncio.get_running_loop().create_future()
    conn.submit(build_request("GET", parse_url(url), "/", {}), lambda e, n: done.set_result(e))
    return await asyncio.wait_for(done, 30)


def _response(headers: int, body: bytes = b"ok") -> bytes:
    """A whole response whose head holds ``headers`` bytes of padding headers."""
    pad = b"".join(b"X-Pad-%06d: %s\r\n" % (i, b"a" * 80) for i in range(headers // 96 + 1))
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), pad, body)


async def test_an_endless_head_is_refused_at_the_limit_and_the_connection_closed() -> None:
    header = b"X-Pad: " + b"a" * 1000 + b"\r\n"
    async with streaming_server(b"HTTP/1.1 200 OK\r\n", header, 256 * MiB) as (url, streamed):
        conn = await _connect(url)
        error = await _submit(conn, url)
        assert error is not None
        assert error.error_class is ErrorClass.PROTOCOL
        assert error.detail == "header block over 64 KiB"
        assert not conn.alive
    # refused as soon as the head passed the limit: the server never got far
    assert streamed.sent < 16 * MiB


async def test_a_whole_head_over_the_limit_is_refused_on_both_paths() -> None:
    response = _response(MAX_HEAD + 1000)
    async with raw_server(lambda transport, data: transport.write(response)) as url:
        conn = await _connect(url)
        error = await _submit(conn, url)
        assert error is not None
        assert error.error_class is ErrorClass.PROTOCOL
        assert error.detail == "header block over 64 KiB"
        conn = await _connect(url)
        with pytest.raises(OpError) as caught:
            await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert caught.value.detail == "header block over 64 KiB"
        assert not conn.alive


async def test_a_head_under_the_limit_is_accepted_and_the_limit_is_configurable() -> None:
    response = _response(MAX_HEAD - 2000)
    assert len(response) < MAX_HEAD
    async with raw_server(lambda transport, data: transport.write(response)) as url:
        conn = await _connect(url)
        assert await _submit(conn, url) is None
        fetched = await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert (fetched.status, fetched.body) == (200, b"ok")
        assert conn.alive
        small = await _connect(url, max_head=4096)
        error = await _submit(small, url)
        assert error is not None
        assert error.detail == "header block over 4 KiB"


async def test_a_body_announced_over_the_limit_is_refused_before_it_comes() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1)
    async with raw_server(lambda transport, data: transport.write(head)) as url:
        conn = await _connect(url)
        with pytest.raises(OpError) as caught:
            await asyncio.wait_for(conn.fetch(build_request("GET", parse_url(url), "/", {})), 10)
        assert (caught.value.error_class, caught.value.detail) == (
            ErrorClass.PROTOCOL,
            "response body over 64 MiB",
        )
        assert not conn.alive


async def test_an_endless_chunked_body_is_refused_at_the_limit() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n%s\r\n" % (MiB, b"x" * MiB)
    async with streaming_server(head, chunk, 4 * MAX_BODY) as (url, streamed):
        conn = await _connect(url)
        with pytest.raises(OpError) as caught:
            await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert caught.value.detail == "response body over 64 MiB"
        assert not conn.alive
    assert streamed.sent < 2 * MAX_BODY


async def test_a_body_not_kept_has_no_limit_and_a_kept_one_is_configurable() -> None:
    body = b"y" * (2 * MiB)
    response = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    async with raw_server(lambda transport, data: transport.write(response)) as url:
        conn = await _connect(url, max_body=MiB)
        request = build_request("GET", parse_url(url), "/", {})
        dropped = await conn.fetch(request, keep_body=False)
        assert dropped.status == 200
        assert dropped.nbytes == len(response)
        assert await _submit(conn, url) is None
        with pytest.raises(OpError) as caught:
            await conn.fetch(request)
        assert caught.value.detail == "response body over 1 MiB"
        conn = await _connect(url, max_body=len(body))
        assert (await conn.fetch(request)).body == body


async def test_a_long_head_after_an_interim_response_in_the_same_read_is_refused() -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    long_head = interim + _response(MAX_HEAD + 1000)
    short_head = interim + _response(MAX_HEAD - 2000, b"z" * 10_000)  # read over the limit
    async with raw_server(lambda transport, data: transport.write(long_head)) as url:
        error = await _submit(await _connect(url), url)
        assert error is not None
        assert error.detail == "header block over 64 KiB"
    async with raw_server(lambda transport, data: transport.write(short_head)) as url:
        assert await _submit(await _connect(url), url) is None
