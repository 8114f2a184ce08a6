"""The haystack plugin against the embedded hs_py server on loopback: SCRAM, every op, errors."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protobench.protocols.haystack import tokens
from protobench.protocols.haystack.credentials import DEV_PASSWORD, DEV_USER
from protobench.protocols.haystack.options import (
    OPERATIONS,
    HisReadParams,
    NavParams,
    PointWriteParams,
    ReadParams,
    WatchParams,
)
from protobench.protocols.haystack.plugin import HaystackProtocol
from protobench.protocols.haystack.scram import login
from protobench.protocols.haystack.sessions.ws import HaystackWsSession, open_ws
from protobench.protocols.http.client import HttpConnection, parse_url
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.haystack import (
    UVLOOP_BACKEND,
    context,
    error_of,
    exchange,
    haystack_server,
    open_and_run,
)
from tests.support.timing import MS

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture(scope="module")
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return UVLOOP_BACKEND


@pytest.fixture(scope="module")
async def url() -> AsyncIterator[str]:
    async with haystack_server() as served:
        yield served


async def test_scram_login_gives_a_token_that_reads(url: str) -> None:
    endpoint = parse_url(url)
    conn = await HttpConnection.connect(endpoint, ssl=None, timeout=10)
    try:
        token, nbytes = await login(conn, endpoint, DEV_USER, DEV_PASSWORD)
    finally:
        conn.close()
    assert len(token) >= 32
    assert nbytes > 0
    results = await open_and_run(context(url, "read"), n=2)
    assert [error for error, _ in results] == [None, None]


async def test_auth_op_is_a_full_handshake_each_time(url: str) -> None:
    results = await open_and_run(context(url, "auth"), n=3)
    assert [error for error, _ in results] == [None, None, None]
    assert all(nbytes > 300 for _, nbytes in results)


async def test_wrong_password_is_an_auth_error_with_the_server_message(url: str) -> None:
    with pytest.raises(OpError) as raised:
        await HaystackProtocol().open_session(context(url, "about", password="wrong-secret"))
    assert raised.value.error_class is ErrorClass.AUTH
    assert raised.value.code == "403"
    assert "Authentication failed" in raised.value.detail
    assert "wrong-secret" not in str(raised.value)
    results = await open_and_run(context(url, "auth", password="wrong-secret"), n=2)
    assert all(e is not None and e.error_class is ErrorClass.AUTH for e, _ in results)
    assert all("Authentication failed" in str(e) for e, _ in results)


async def test_unknown_user_is_an_auth_error(url: str) -> None:
    with pytest.raises(OpError) as raised:
        await HaystackProtocol().open_session(context(url, "about", user="nobody"))
    assert raised.value.error_class is ErrorClass.AUTH
    assert "nobody" in raised.value.detail


async def test_password_from_the_environment(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PB_TEST_HS_PASSWORD", DEV_PASSWORD)
    ctx = context(url, "about", password=None, password_env="PB_TEST_HS_PASSWORD")
    assert [e for e, _ in await open_and_run(ctx, n=1)] == [None]
    monkeypatch.setenv("PB_TEST_HS_PASSWORD", "not-it")
    with pytest.raises(OpError, match="Authentication failed"):
        await HaystackProtocol().open_session(ctx)


def _params(op: str) -> Any:
    base = op.removeprefix("ws-")
    if base == "read":
        return ReadParams(filters=["site", "point", "ahu", "vav and equip"], min_rows=1)
    if base == "nav":
        return NavParams(nav_ids=["", "s1", "s1.ahu1"])
    if base == "his-read":
        return HisReadParams(max_points=5)
    if base == "point-write":
        return PointWriteParams(max_points=5)
    if base in ("watch-sub", "watch-poll"):
        return WatchParams(max_points=5, refresh=True)
    return OPERATIONS[op]()


@pytest.mark.parametrize("validation", ["meta", "grid", "decode"])
@pytest.mark.parametrize("fmt", ["json", "zinc"])
async def test_every_op_returns_valid_grids(url: str, fmt: str, validation: str) -> None:
    for op in OPERATIONS:
        if op.startswith("ws-") and fmt == "zinc":
            continue
        results = await open_and_run(
            context(url, op, _params(op), format=fmt, validation=validation), n=4
        )
        assert [error for error, _ in results] == [None] * 4, (op, results)
        assert all(nbytes > 0 for _, nbytes in results), op


async def test_sessions_spread_over_the_filters(url: str) -> None:
    params = ReadParams(filters=["site", "point"])
    first = await open_and_run(context(url, "read", params, index=0), n=1)
    second = await open_and_run(context(url, "read", params, index=1), n=1)
    assert first[0][1] < 10_000 < second[0][1]


@pytest.mark.parametrize("op", ["read", "ws-read"])
@pytest.mark.parametrize("validation", ["meta", "grid", "decode"])
async def test_invalid_filter_is_a_protocol_error_with_the_grid_dis(
    url: str, op: str, validation: str
) -> None:
    params = ReadParams(filters=["site and (", "site"])
    results = await open_and_run(context(url, op, params, validation=validation), n=2)
    error = error_of(results[0], ErrorClass.PROTOCOL)
    assert error.code == "error-grid"
    assert "invalid filter" in error.detail
    assert results[1][0] is None


async def test_min_rows_is_checked(url: str) -> None:
    params = ReadParams(filters=["site"], min_rows=2)
    results = await open_and_run(context(url, "read", params), n=1)
    error = error_of(results[0], ErrorClass.VALIDATION)
    assert "at least 2 rows, got 1" in error.detail


async def test_no_point_matching_fails_the_session_open(url: str) -> None:
    params = HisReadParams(point_filter="point and nonexistentTag")
    with pytest.raises(OpError) as raised:
        await HaystackProtocol().open_session(context(url, "his-read", params))
    assert raised.value.error_class is ErrorClass.VALIDATION


async def test_rejected_token_is_auth_then_the_session_logs_in_again(url: str) -> None:
    endpoint = parse_url(url)
    key = (id(asyncio.get_running_loop()), endpoint.url, DEV_USER)
    forged: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    forged.set_result("forged-token")
    tokens._shared[key] = forged
    try:
        session = await HaystackProtocol().open_session(context(url, "about", auth_per="worker"))
        try:
            results = await exchange(session, 3)
        finally:
            await session.close()
    finally:
        tokens._shared.pop(key, None)
    assert error_of(results[0], ErrorClass.AUTH).code == "401"
    assert [error for error, _ in results[1:]] == [None, None]


async def test_worker_token_is_shared_and_failures_are_not_cached(url: str) -> None:
    endpoint = parse_url(url)
    conns = [await HttpConnection.connect(endpoint, ssl=None, timeout=10) for _ in range(3)]
    try:
        with pytest.raises(OpError):
            await tokens.obtain(conns[0], endpoint, DEV_USER, "bad", shared=True)
        got = await asyncio.gather(
            *(tokens.obtain(c, endpoint, DEV_USER, DEV_PASSWORD, shared=True) for c in conns)
        )
        assert len(set(got)) == 1
        tokens.forget(endpoint, DEV_USER, got[0])
        again = await tokens.obtain(conns[0], endpoint, DEV_USER, DEV_PASSWORD, shared=True)
        assert again != got[0]
        tokens.forget(endpoint, DEV_USER, again)
    finally:
        for conn in conns:
            conn.close()


async def test_websocket_with_a_bad_token_is_an_auth_error(url: str) -> None:
    ws = await open_ws(url.replace("http://", "ws://") + "/ws", "bad-token", ssl=None, timeout=5)
    session = HaystackWsSession(ws, lambda: '{"op":"about","id":%d}', "meta", 5.0)
    try:
        results = await exchange(session, 1)
    finally:
        await session.close()
    assert error_of(results[0], ErrorClass.AUTH).code == "4003"


async def test_no_login_against_a_server_that_wants_one_is_auth(url: str) -> None:
    results = await open_and_run(context(url, "about", auth=False), n=1)
    assert error_of(results[0], ErrorClass.AUTH).code == "401"


async def test_connection_closed_by_the_server_while_idle_is_reopened() -> None:
    async with haystack_server(idle_timeout=0.3) as served:
        for op in ("read", "ws-read"):
            session = await HaystackProtocol().open_session(context(served, op))
            try:
                first = await exchange(session, 1)
                await asyncio.sleep(800 * MS)
                second = await exchange(session, 2)
            finally:
                await session.close()
            assert [error for error, _ in first + second] == [None] * 3, op


async def test_a_response_body_over_max_body_size_is_one_protocol_error_then_a_new_connection(
    url: str,
) -> None:
    """hs_py's grid of every point is longer than 1 KiB: refused at the limit, the
    connection closed, the session's next exchange on a new one (one error per exchange)."""
    counters: Counter[str] = Counter()
    params = ReadParams(filters=["point"])
    ctx = context(url, "read", params, counters=counters, max_body_size="1KiB")
    results = await open_and_run(ctx, n=3)
    for result in results:
        assert error_of(result, ErrorClass.PROTOCOL).detail == "response body over 1 KiB"
    # the engine counts the first connection; the second and third exchanges opened their own
    assert counters["connects"] == 2, counters
    big = await open_and_run(context(url, "read", params, max_body_size="1MiB"), n=1)
    assert big[0][0] is None
    assert big[0][1] > 1024  # the same grid under a larger limit: the limit refused it


async def test_a_response_head_over_max_header_size_fails_the_login(url: str) -> None:
    with pytest.raises(OpError) as raised:
        await HaystackProtocol().open_session(context(url, "about", max_header_size="64B"))
    assert raised.value.error_class is ErrorClass.PROTOCOL
    assert raised.value.detail == "header block over 64 B"
