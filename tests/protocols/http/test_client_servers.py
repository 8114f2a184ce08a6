"""HttpConnection against the embedded target and raw servers on loopback.

Every test runs twice: on the loop's own transport (the user clock) and on the
stamped transport that reads the kernel's timestamps (the kernel clock).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from protobench.protocols.http.client import HttpConnection, build_request, parse_url
from protobench.protocols.timestamps.clock import probe
from protobench.protocols.timestamps.reactor import Reactor
from protobench.targets.http import encode_response
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.http import UVLOOP_BACKEND, closed_port, http_target, raw_server
from tests.support.timing import S

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> object:
    return UVLOOP_BACKEND


_CLOCK = ["user"]


@pytest.fixture(autouse=True, params=["user", "kernel"])
def clock(request: pytest.FixtureRequest) -> Iterator[str]:
    """The clock of the connections the test opens (``_connect``)."""
    if request.param == "kernel" and not probe().receive:
        pytest.skip(f"no kernel timestamps here: {probe().reason}")
    _CLOCK[0] = request.param
    yield request.param
    _CLOCK[0] = "user"


async def _connect(url: str, limit: float = 5.0) -> HttpConnection:
    reactor = Reactor.of() if _CLOCK[0] == "kernel" else None
    conn = await HttpConnection.connect(parse_url(url), ssl=None, timeout=limit, reactor=reactor)
    assert conn.stamps.kernel_receive is (reactor is not None)
    return conn


async def test_keep_alive_reuses_one_connection() -> None:
    async with http_target() as server:
        endpoint = parse_url(server.url)
        conn = await _connect(server.url)
        request = build_request("GET", endpoint, "/", {})
        for _ in range(200):
            response = await conn.fetch(request)
            assert response.status == 200
            assert response.body == b"Hello, World!"
        assert conn.alive
        conn.close()
        assert server.served == 200
        assert server.connections == 1


async def test_fetch_returns_status_headers_and_body() -> None:
    async with http_target(status=201, body_size=3000) as server:
        conn = await _connect(server.url)
        response = await conn.fetch(build_request("GET", parse_url(server.url), "/", {}))
        assert response.status == 201
        assert response.reason == "Created"
        assert response.header("Content-Length") == b"3000"
        assert response.header("server") == b"protobench"
        assert len(response.body) == 3000
        assert response.nbytes > 3000
        dropped = await conn.fetch(
            build_request("GET", parse_url(server.url), "/", {}), keep_body=False
        )
        assert dropped.body == b""
        assert dropped.nbytes == response.nbytes
        conn.close()


async def test_head_response_has_no_body_and_the_connection_goes_on() -> None:
    async with http_target() as server:
        endpoint = parse_url(server.url)
        conn = await _connect(server.url)
        head = await conn.fetch(build_request("HEAD", endpoint, "/", {}))
        assert head.status == 200
        assert head.body == b""
        assert head.header("content-length") == b"13"
        get = await conn.fetch(build_request("GET", endpoint, "/", {}))
        assert get.body == b"Hello, World!"
        conn.close()
        assert server.connections == 1


async def test_submit_reports_bytes_and_maps_statuses() -> None:
    async with http_target(status=503) as server:
        conn = await _connect(server.url)
        request = build_request("GET", parse_url(server.url), "/", {})
        results: list[tuple[OpError | None, int]] = []
        finished = asyncio.Event()

        def done(error: OpError | None, nbytes: int) -> None:
            results.append((error, nbytes))
            if len(results) < 3:
                conn.submit(request, done)
            else:
                finished.set()

        conn.submit(request, done)
        await asyncio.wait_for(finished.wait(), 10)
        for error, nbytes in results:
            assert error is not None
            assert error.error_class is ErrorClass.PROTOCOL
            assert error.code == "503"
            assert error.detail == "Service Unavailable"
            assert nbytes == len(encode_response(503, 13))
        conn.accept = frozenset({503})
        ok: asyncio.Future[tuple[OpError | None, int]] = asyncio.get_running_loop().create_future()
        conn.submit(request, lambda e, n: ok.set_result((e, n)))
        assert (await ok)[0] is None
        conn.close()


async def test_post_body_arrives_intact() -> None:
    received = bytearray()

    def capture(transport: asyncio.Transport, data: bytes) -> None:
        received.extend(data)
        if received.endswith(b"0123456789" * 10_000):
            transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    body = b"0123456789" * 10_000
    async with raw_server(capture) as url:
        conn = await _connect(url)
        response = await conn.fetch(
            build_request("POST", parse_url(url), "/upload", {"Content-Type": "x/y"}, body)
        )
        assert response.status == 204
        head, sent = bytes(received).split(b"\r\n\r\n", 1)
        assert head.startswith(b"POST /upload HTTP/1.1\r\n")
        assert b"Content-Length: 100000" in head
        assert sent == body
        conn.close()


async def test_post_to_the_target_keeps_the_connection_in_step() -> None:
    async with http_target() as server:
        endpoint = parse_url(server.url)
        conn = await _connect(server.url)
        for size in (0, 1, 70_000):
            response = await conn.fetch(build_request("POST", endpoint, "/", {}, b"x" * size))
            assert response.status == 200
        conn.close()
        assert server.served == 3
        assert server.connections == 1


async def test_refused_port_is_refused() -> None:
    with pytest.raises(OpError) as caught:
        await _connect(f"http://127.0.0.1:{closed_port()}/")
    assert caught.value.error_class is ErrorClass.REFUSED


async def test_timeout_against_a_delayed_target() -> None:
    async with http_target(delay="2s") as server:
        conn = await _connect(server.url, limit=0.2)
        started = time.perf_counter()
        with pytest.raises(OpError) as caught:
            await conn.fetch(build_request("GET", parse_url(server.url), "/", {}))
        assert caught.value.error_class is ErrorClass.TIMEOUT
        assert time.perf_counter() - started >= 0.19
        assert not conn.alive


async def test_timer_follows_the_request_in_flight() -> None:
    """One timer per connection: armed by the first request, moved to later ones."""
    async with http_target(delay="100ms") as server:
        endpoint = parse_url(server.url)
        limit = 0.35 * S
        conn = await _connect(server.url, limit=limit)
        request = build_request("GET", endpoint, "/", {})
        for _ in range(int(limit / 0.1) + 3):  # well past the limit, each request inside it
            assert (await conn.fetch(request)).status == 200
        assert conn.alive
        conn.close()


async def test_peer_closing_without_a_response_is_closed() -> None:
    async with raw_server(lambda transport, data: transport.close()) as url:
        conn = await _connect(url)
        with pytest.raises(OpError) as caught:
            await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert caught.value.error_class is ErrorClass.CLOSED
        assert not conn.alive


async def test_peer_resetting_is_closed() -> None:
    async with raw_server(lambda transport, data: transport.abort()) as url:
        conn = await _connect(url)
        done: asyncio.Future[OpError | None] = asyncio.get_running_loop().create_future()
        conn.submit(build_request("GET", parse_url(url), "/", {}), lambda e, n: done.set_result(e))
        error = await asyncio.wait_for(done, 10)
        assert error is not None
        assert error.error_class is ErrorClass.CLOSED


async def test_malformed_response_is_a_protocol_error() -> None:
    async with raw_server(lambda transport, data: transport.write(b"NOT HTTP\r\n\r\n")) as url:
        conn = await _connect(url)
        with pytest.raises(OpError) as caught:
            await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert caught.value.error_class is ErrorClass.PROTOCOL
        assert "malformed response" in caught.value.detail
        assert not conn.alive


async def test_connection_close_response_completes_then_marks_the_connection_dead() -> None:
    def respond_and_close(transport: asyncio.Transport, data: bytes) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        transport.close()

    async with raw_server(respond_and_close) as url:
        conn = await _connect(url)
        response = await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert response.body == b"ok"
        assert not conn.alive
        with pytest.raises(OpError) as caught:
            await conn.fetch(build_request("GET", parse_url(url), "/", {}))
        assert caught.value.error_class is ErrorClass.CLOSED


async def test_chunked_response_is_read_whole() -> None:
    def chunked(transport: asyncio.Transport, data: bytes) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        transport.write(b"5\r\nHello\r\n")
        transport.write(b"8\r\n, World!\r\n0\r\n\r\n")

    async with raw_server(chunked) as url:
        conn = await _connect(url)
        request = build_request("GET", parse_url(url), "/", {})
        assert (await conn.fetch(request)).body == b"Hello, World!"
        assert (await conn.fetch(request)).body == b"Hello, World!"
        conn.close()


async def test_close_fails_the_request_in_flight() -> None:
    async with http_target(delay="1s") as server:
        conn = await _connect(server.url)
        task = asyncio.ensure_future(
            conn.fetch(build_request("GET", parse_url(server.url), "/", {}))
        )
        await asyncio.sleep(0.05)
        conn.close()
        with pytest.raises(OpError) as caught:
            await task
        assert caught.value.error_class is ErrorClass.CLOSED
