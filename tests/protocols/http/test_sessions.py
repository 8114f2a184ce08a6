"""The http plugin's sessions against real servers on loopback."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import Counter
from pathlib import Path

import pytest

from protobench.protocols.base import CallbackSession
from protobench.protocols.http.plugin import HttpProtocol
from protobench.protocols.timestamps.clock import probe
from protobench.protocols.timestamps.reactor import Reactor
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.http import (
    UVLOOP_BACKEND,
    back_to_back,
    closed_port,
    context,
    exchange,
    http_target,
    open_session,
    raw_server,
    self_signed,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> object:
    return UVLOOP_BACKEND


async def test_served_count_equals_completed_count() -> None:
    async with http_target() as server:
        sessions = [await open_session(server.url) for _ in range(8)]
        results = await asyncio.gather(*(back_to_back(s, 250) for s in sessions))
        completed = sum(1 for batch in results for error, _ in batch if error is None)
        assert completed == 2000
        assert server.served == completed
        assert server.connections == 8
        assert all(nbytes == 98 for batch in results for _, nbytes in batch)
        for session in sessions:
            await session.close()


async def test_unexpected_status_is_a_protocol_error_coded_by_status() -> None:
    async with http_target(status=503) as server:
        session = await open_session(server.url)
        error, _ = await exchange(session)
        assert error is not None
        assert (error.error_class, error.code, error.detail) == (
            ErrorClass.PROTOCOL,
            "503",
            "Service Unavailable",
        )
        expected = await open_session(server.url, expect_status=[503])
        assert (await exchange(expected))[0] is None
        await session.close()
        await expected.close()


async def test_expect_status_turns_a_2xx_into_an_error() -> None:
    async with http_target(status=204) as server:
        session = await open_session(server.url, expect_status=[200])
        error, _ = await exchange(session)
        assert error is not None
        assert error.code == "204"
        await session.close()


async def test_post_body_from_a_file(tmp_path: Path) -> None:
    body_file = tmp_path / "body.json"
    body_file.write_bytes(b'{"hello": "world"}')
    received = bytearray()

    def capture(transport: asyncio.Transport, data: bytes) -> None:
        received.extend(data)
        if received.endswith(b"}"):
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    async with raw_server(capture) as url:
        session = await open_session(
            url,
            method="POST",
            path="/items",
            headers={"Content-Type": "application/json"},
            body_file=str(body_file),
        )
        assert (await exchange(session))[0] is None
        assert bytes(received).startswith(b"POST /items HTTP/1.1\r\n")
        assert bytes(received).endswith(b'Content-Length: 18\r\n\r\n{"hello": "world"}')
        await session.close()


async def test_head_requests_run_back_to_back() -> None:
    async with http_target() as server:
        session = await open_session(server.url, method="HEAD")
        results = await back_to_back(session, 20)
        assert all(error is None for error, _ in results)
        assert server.served == 20
        assert server.connections == 1
        await session.close()


async def test_timeout_then_the_session_reconnects() -> None:
    async with http_target(delay="1s") as server:
        session = await open_session(server.url, timeout=0.15)
        error, _ = await exchange(session)
        assert error is not None
        assert error.error_class is ErrorClass.TIMEOUT
        error, _ = await exchange(session)
        assert error is not None
        assert error.error_class is ErrorClass.TIMEOUT
        assert server.connections == 2
        await session.close()


async def test_refused_port_fails_the_open() -> None:
    with pytest.raises(OpError) as caught:
        await open_session(f"http://127.0.0.1:{closed_port()}/")
    assert caught.value.error_class is ErrorClass.REFUSED


async def test_bad_target_url_fails_the_open_with_a_clear_message() -> None:
    with pytest.raises(OpError, match="http:// or https://"):
        await open_session("mqtt://127.0.0.1:1883")


async def test_server_closing_mid_request_is_closed() -> None:
    async with raw_server(lambda transport, data: transport.close()) as url:
        session = await open_session(url)
        error, nbytes = await exchange(session)
        assert error is not None
        assert error.error_class is ErrorClass.CLOSED
        assert nbytes == 0
        await session.close()


async def test_server_closing_after_each_response_costs_no_error() -> None:
    connections = 0

    def respond_and_close(transport: asyncio.Transport, data: bytes) -> None:
        nonlocal connections
        connections += 1
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        transport.close()

    async with raw_server(respond_and_close) as url:
        session = await open_session(url)
        results = await back_to_back(session, 5)
        assert [error for error, _ in results] == [None] * 5
        assert connections == 5
        await session.close()


def _close_delimited(transport: asyncio.Transport, data: bytes) -> None:
    """A server of RFC 9112 rule 8: no Content-Length, no chunking; the close ends the body."""
    transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
    transport.write(b"hello, ")
    transport.write(b"world")
    transport.close()


def _http10(transport: asyncio.Transport, data: bytes) -> None:
    transport.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")


@pytest.mark.parametrize("server", [_close_delimited, _http10], ids=["until-close", "http-1.0"])
async def test_responses_that_end_the_connection_are_ok_and_count_connects(
    server: object,
) -> None:
    counters: Counter[str] = Counter()
    async with raw_server(server) as url:  # type: ignore[arg-type]
        session = await open_session(url, counters=counters)
        results = await back_to_back(session, 6)
        assert [error for error, _ in results] == [None] * 6
        # the plugin counts every connection, the session's first too (counts_connects:
        # HTTP/2 sessions share theirs, so the engine cannot count one per session)
        assert counters["connects"] == 6
        await session.close()


async def test_the_target_url_path_is_requested_as_given() -> None:
    lines: list[bytes] = []

    def record(transport: asyncio.Transport, data: bytes) -> None:
        lines.append(data.split(b"\r\n", 1)[0])
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    async with raw_server(record) as url:
        for target, path in [
            (f"{url}big.bin", None),
            (f"{url}api/", "items?x=1"),
            (f"{url}api/v1", "/health"),
        ]:
            session = await open_session(target, **({"path": path} if path else {}))
            assert (await exchange(session))[0] is None
            await session.close()
    assert lines == [
        b"GET /big.bin HTTP/1.1",
        b"GET /api/items?x=1 HTTP/1.1",
        b"GET /health HTTP/1.1",
    ]


async def test_tls_verification_failure_is_a_connect_error(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    async with http_target(ssl=server_tls) as server:
        assert server.url.startswith("https://")
        with pytest.raises(OpError) as caught:
            await open_session(server.url)
        assert caught.value.error_class is ErrorClass.CONNECT
        assert "certificate verification failed" in caught.value.detail
        assert "self-signed certificate" in caught.value.detail

        insecure = await open_session(server.url, options={"insecure": True})
        assert (await exchange(insecure))[0] is None
        trusted = await open_session(server.url, options={"ca_file": str(cert)})
        results = await back_to_back(trusted, 50)
        assert all(error is None for error, _ in results)
        assert server.served == 51
        await insecure.close()
        await trusted.close()


async def test_the_kernel_clock_reads_plain_http_and_leaves_tls_to_the_loop(
    tmp_path: Path,
) -> None:
    """With a reactor a plain connection, and each one reopened after the server closed the
    last, is read with the kernel's stamps (the reply's after the request's); a TLS
    connection is read on the loop's transport and only its send is stamped, in user space."""
    if not probe().receive:
        pytest.skip(f"no kernel timestamps here: {probe().reason}")
    reactor = Reactor.of()

    def respond_and_close(transport: asyncio.Transport, data: bytes) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        transport.close()

    async with raw_server(respond_and_close) as url:
        ctx = context(url, reactor=reactor)
        session = await HttpProtocol().open_session(ctx)
        assert isinstance(session, CallbackSession)
        # The kernel turns stamping on host-wide from a work queue when the first socket
        # asks: the very first reply may come unstamped; the reactor keeps it on after.
        assert (await exchange(session))[0] is None
        for _ in range(3):  # each on a new connection, kept on the kernel's clock
            ctx.stamps.sent = 0
            assert (await exchange(session))[0] is None
            assert ctx.stamps.kernel_receive
            assert 0 < ctx.stamps.sent < ctx.stamps.received <= time.perf_counter_ns()
        await session.close()
    cert, key = self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    async with http_target(ssl=server_tls) as server:
        ctx = context(server.url, options={"ca_file": str(cert)}, reactor=reactor)
        session = await HttpProtocol().open_session(ctx)
        assert isinstance(session, CallbackSession)
        before = time.perf_counter_ns()
        assert (await exchange(session))[0] is None
        assert not ctx.stamps.kernel_receive
        assert before <= ctx.stamps.sent <= time.perf_counter_ns()
        assert ctx.stamps.received == 0
        await session.close()
