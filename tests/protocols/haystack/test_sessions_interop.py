"""The haystack plugin against servers that behave unlike ours, all on loopback.

hs_py's own server (the embedded target is hs_py's FastAPI app) with its
default 600,000 PBKDF2 iterations; raw HTTP servers that answer with error
grids or record what they were sent; WebSocket servers (the ``websockets``
package's) that answer without an id, refuse the subprotocol or the upgrade.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from hs_py.encoding import json as hs_json
from hs_py.grid import Grid
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request
from websockets.http11 import Response as WsResponse

from protobench.protocols.haystack import scram_proof
from protobench.protocols.haystack.plugin import HaystackProtocol
from protobench.protocols.haystack.sessions.ws import HaystackWsSession, open_ws
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.haystack import (
    UVLOOP_BACKEND,
    context,
    error_of,
    exchange,
    haystack_server,
    open_and_run,
)
from tests.support.http import raw_server
from tests.support.timing import MS

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ABOUT = bytes(hs_json.encode_grid(Grid.make_rows([{"serverName": "raw"}])))


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return UVLOOP_BACKEND


def _respond(status: str, body: bytes, seen: list[bytes] | None = None) -> Callable[..., None]:
    def on_data(transport: asyncio.Transport, data: bytes) -> None:
        if seen is not None:
            seen.append(data)
        transport.write(
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    return on_data


async def test_auth_ops_derive_pbkdf2_once_and_off_the_loop_against_600k_iterations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scram_proof, "_salted", {})
    threads: list[int] = []
    real = hashlib.pbkdf2_hmac

    def counting(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        threads.append(threading.get_ident())
        return real(name, password, salt, iterations)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting)
    async with haystack_server(iterations=600_000) as url:
        batches = await asyncio.gather(*(open_and_run(context(url, "auth"), n=3) for _ in range(2)))
    assert [error for batch in batches for error, _ in batch] == [None] * 6
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()


async def test_a_refusal_quotes_the_error_grid_dis() -> None:
    error_grid = bytes(hs_json.encode_grid(Grid.make_error("op not supported: about")))
    async with raw_server(_respond("501 Not Implemented", error_grid)) as url:
        results = await open_and_run(context(url.rstrip("/"), "about", auth=False), n=1)
    error = error_of(results[0], ErrorClass.PROTOCOL)
    assert (error.code, error.detail) == ("501", "op not supported: about")


async def test_requests_carry_meta_ver_content_type_and_headers() -> None:
    seen: list[bytes] = []
    async with raw_server(_respond("200 OK", ABOUT, seen)) as url:
        ctx = context(
            url.rstrip("/"),
            "read",
            auth=False,
            content_type="application/json",
            headers={"X-Tenant": "north"},
        )
        results = await open_and_run(ctx, n=2)
    assert [error for error, _ in results] == [None, None]
    head, _, body = seen[-1].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /read HTTP/1.1"
    assert b"Content-Type: application/json" in lines
    assert b"X-Tenant: north" in lines
    assert orjson.loads(body)["meta"] == {"ver": "3.0"}


async def test_reopened_connections_count_in_connects() -> None:
    counters: Counter[str] = Counter()
    async with haystack_server(idle_timeout=0.3) as served:
        session = await HaystackProtocol().open_session(context(served, "read", counters=counters))
        try:
            first = await exchange(session, 1)
            await asyncio.sleep(800 * MS)
            second = await exchange(session, 2)
        finally:
            await session.close()
    assert [error for error, _ in first + second] == [None] * 3
    assert counters["connects"] == 1


@asynccontextmanager
async def ws_server(
    handler: Callable[[ServerConnection], Any],
    subprotocols: list[str] | None,
    process_request: Callable[[ServerConnection, Request], WsResponse | None] | None = None,
) -> AsyncIterator[str]:
    async with serve(
        handler,
        "127.0.0.1",
        0,
        subprotocols=subprotocols,  # type: ignore[arg-type]
        process_request=process_request,
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/api/ws"


async def _unknown_op(ws: ServerConnection) -> None:
    async for _ in ws:
        await ws.send('{"error":"unknown op: about"}')


async def test_a_websocket_reply_without_an_id_is_protocol_with_the_server_text() -> None:
    async with ws_server(_unknown_op, ["haystack"]) as url:
        ws = await open_ws(url, None, ssl=None, timeout=5)
        session = HaystackWsSession(ws, lambda: '{"op":"about","id":%d}', "meta", 5.0)
        try:
            results = await exchange(session, 2)
        finally:
            await session.close()
    for result in results:
        assert "unknown op: about" in error_of(result, ErrorClass.PROTOCOL).detail


async def test_a_refused_haystack_subprotocol_is_protocol() -> None:
    async with ws_server(_unknown_op, None) as url:
        with pytest.raises(OpError) as caught:
            await open_ws(url, None, ssl=None, timeout=5)
    assert (caught.value.error_class, caught.value.code) == (ErrorClass.PROTOCOL, "subprotocol")


async def test_a_refused_upgrade_quotes_the_error_grid() -> None:
    body = bytes(hs_json.encode_grid(Grid.make_error("WebSocket API disabled")))

    def refuse(_: ServerConnection, request: Request) -> WsResponse:
        return WsResponse(404, "Not Found", Headers({"Content-Type": "application/json"}), body)

    async with ws_server(_unknown_op, ["haystack"], refuse) as url:
        with pytest.raises(OpError) as caught:
            await open_ws(url, None, ssl=None, timeout=5)
    assert (caught.value.error_class, caught.value.code) == (ErrorClass.PROTOCOL, "404")
    assert caught.value.detail.endswith(": WebSocket API disabled")


async def _push_then_reply(ws: ServerConnection) -> None:
    async for raw in ws:
        ident = orjson.loads(raw)["id"]
        await ws.send('{"type":"watch","watchId":"w1","grid":' + ABOUT.decode() + "}")
        await ws.send('{"grid":' + ABOUT.decode() + f',"id":{ident}}}')


async def test_a_watch_push_without_an_id_is_skipped() -> None:
    async with ws_server(_push_then_reply, ["haystack"]) as url:
        ws = await open_ws(url, None, ssl=None, timeout=5)
        session = HaystackWsSession(ws, lambda: '{"op":"about","id":%d}', "grid", 5.0)
        try:
            results = await exchange(session, 2)
        finally:
            await session.close()
    assert [error for error, _ in results] == [None, None]
