"""The embedded HTTP target: stats, delays, pipelining order, stalls, loopback only."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from protobench.protocols.http.client import HttpConnection, build_request, parse_url
from protobench.targets.http import HttpTargetOptions, start_server
from tests.support.http import UVLOOP_BACKEND, http_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> object:
    return UVLOOP_BACKEND


async def _pipelined(url: str, raw: bytes) -> bytes:
    """Write ``raw`` at once on a new connection; read until the server closes."""
    endpoint = parse_url(url)
    reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
    writer.write(raw)
    data = await asyncio.wait_for(reader.read(-1), 10)
    writer.close()
    return data


async def test_stats_endpoint_is_not_counted() -> None:
    async with http_target() as server:
        endpoint = parse_url(server.url)
        conn = await HttpConnection.connect(endpoint, ssl=None, timeout=5)
        for _ in range(3):
            await conn.fetch(build_request("GET", endpoint, "/anything?x=1", {}))
        stats = await conn.fetch(build_request("GET", endpoint, "/__protobench__/stats", {}))
        assert stats.header("content-type") == b"application/json"
        assert json.loads(stats.body) == {"served": 3, "connections": 1}
        again = await conn.fetch(build_request("GET", endpoint, "/__protobench__/stats", {}))
        assert json.loads(again.body)["served"] == 3
        conn.close()


@pytest.mark.parametrize("delay", ["0s", "30ms"])
async def test_pipelined_requests_are_answered_in_order(delay: str) -> None:
    async with http_target(delay=delay) as server:
        get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        stats = b"GET /__protobench__/stats HTTP/1.1\r\nHost: x\r\n\r\n"
        last = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        data = await _pipelined(server.url, get + get + stats + get + last)
        bodies = [part.split(b"\r\n\r\n", 1)[1] for part in data.split(b"HTTP/1.1 ")[1:]]
        assert bodies == [
            b"Hello, World!",
            b"Hello, World!",
            b'{"served": 2, "connections": 1}',
            b"Hello, World!",
            b"Hello, World!",
        ]
        assert server.served == 4


async def test_http_1_0_request_gets_its_answer_then_close() -> None:
    async with http_target() as server:
        data = await _pipelined(server.url, b"GET / HTTP/1.0\r\n\r\n")
        assert data.startswith(b"HTTP/1.1 200 OK\r\n")
        assert data.endswith(b"Hello, World!")


async def test_bad_request_gets_400_and_close() -> None:
    async with http_target() as server:
        data = await _pipelined(server.url, b"NOT A REQUEST\r\n\r\n")
        assert data.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert server.served == 0


async def test_delay_is_never_shorter_than_asked() -> None:
    async with http_target(delay="20ms") as server:
        endpoint = parse_url(server.url)
        conn = await HttpConnection.connect(endpoint, ssl=None, timeout=5)
        request = build_request("GET", endpoint, "/", {})
        latencies = []
        for _ in range(20):
            started = time.perf_counter()
            await conn.fetch(request)
            latencies.append(time.perf_counter() - started)
        conn.close()
        assert min(latencies) >= 0.020


async def test_stall_blocks_the_whole_server_once() -> None:
    """The first request arms the stall; a request made after it waits for the stall's end.

    The server runs in its own process so that its stall does not block the test's loop.
    """
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "protobench", "serve", "http", "--port", "0", "--announce"],
        *["--stall-at", "200ms", "--stall-for", "600ms"],
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        url = json.loads(await process.stdout.readline())["url"]
        endpoint = parse_url(url)
        conn = await HttpConnection.connect(endpoint, ssl=None, timeout=5)
        request = build_request("GET", endpoint, "/", {})
        slowest = 0.0
        ended = time.perf_counter() + 1.5
        while time.perf_counter() < ended:
            started = time.perf_counter()
            await conn.fetch(request)
            slowest = max(slowest, time.perf_counter() - started)
            await asyncio.sleep(0.01)
        assert slowest >= 0.4
        stats = await conn.fetch(build_request("GET", endpoint, "/__protobench__/stats", {}))
        assert json.loads(stats.body)["served"] >= 20
        conn.close()
    finally:
        process.terminate()
        await process.wait()


async def test_only_loopback_addresses_are_bound() -> None:
    with pytest.raises(ValueError, match="loopback addresses only"):
        await start_server("0.0.0.0", 0, HttpTargetOptions())
