"""The HTTP/2 client against the embedded target (the ``h2`` package's server) and raw servers.

The embedded target gives the behaviours a server chooses (delays, statuses,
RST_STREAM, GOAWAY, a stalled window, a concurrency limit); scripted servers on
raw sockets give what no good server sends (malformed frames, an oversized
header block, an HTTP/1 answer to the preface).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import hpack
import pytest

from protobench.protocols.base import CallbackSession
from protobench.protocols.http.h2 import frames as f
from protobench.protocols.http.h2.client import MAX_HEADER_BLOCK
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.h2 import h2_session, response, scripted_h2
from tests.support.http import UVLOOP_BACKEND, back_to_back, exchange, http_target, raw_server
from tests.support.timing import S

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> object:
    return UVLOOP_BACKEND


async def _sessions(url: str, count: int, **kwargs: object) -> list[CallbackSession]:
    return [await h2_session(url, streams=count, **kwargs) for _ in range(count)]  # type: ignore[arg-type]


async def _run(sessions: list[CallbackSession], each: int) -> list[tuple[OpError | None, int]]:
    results = await asyncio.gather(*(back_to_back(s, each) for s in sessions))
    return [r for rs in results for r in rs]


async def _close(sessions: list[CallbackSession]) -> None:
    for session in sessions:
        await session.close()


async def test_streams_share_one_connection_and_every_response_is_counted() -> None:
    async with http_target() as server:
        counters: Counter[str] = Counter()
        sessions = await _sessions(server.url, 10, counters=counters)
        results = await _run(sessions, 50)
        await _close(sessions)
        assert [e for e, _ in results if e is not None] == []
        assert all(n > len("Hello, World!") for _, n in results)
        assert server.served == 500
        assert server.connections == 1
        assert counters["connects"] == 1
        assert {s.negotiated for s in sessions} == {"h2c"}


async def test_delays_are_in_the_latency_and_streams_run_side_by_side() -> None:
    async with http_target(delay="100ms") as server:
        sessions = await _sessions(server.url, 10)
        started = time.perf_counter()
        results = await _run(sessions, 2)
        elapsed = time.perf_counter() - started
        await _close(sessions)
        assert all(e is None for e, _ in results)
        assert 0.2 <= elapsed < 2.0 * S  # 20 requests of 100 ms, ten at a time: 2 rounds


async def test_a_status_not_accepted_is_a_protocol_error_with_its_code() -> None:
    async with http_target(status=503) as server:
        session = await h2_session(server.url)
        error, nbytes = await exchange(session)
        assert error is not None
        assert error.error_class is ErrorClass.PROTOCOL
        assert (error.code, error.detail) == ("503", "Service Unavailable")
        assert nbytes > 0
        await session.close()
        accepting = await h2_session(server.url, expect_status=[503])
        assert (await exchange(accepting))[0] is None
        await accepting.close()


async def test_reset_streams_are_errors_with_the_h2_code() -> None:
    async with http_target(h2_reset_every=3, h2_reset_code=8) as server:
        sessions = await _sessions(server.url, 3)
        results = await _run(sessions, 10)
        await _close(sessions)
        codes = Counter(e.code if e else "ok" for e, _ in results)
        assert codes == {"ok": 20, "h2:CANCEL": 10}
        assert server.served == 20


async def test_goaway_finishes_the_streams_below_and_sends_the_others_again() -> None:
    """The server goes away after 25 streams with 10 in flight: the streams above its last
    stream id are sent again on a new connection, once; none is lost or doubled."""
    async with http_target(h2_goaway_after=25) as server:
        counters: Counter[str] = Counter()
        sessions = await _sessions(server.url, 10, counters=counters)
        results = await _run(sessions, 20)
        await _close(sessions)
        assert [e for e, _ in results if e is not None] == []
        assert server.served == 200
        assert counters["connects"] == server.connections >= 8
        assert counters["h2_retried"] > 0


async def test_the_servers_concurrency_limit_bounds_the_streams_in_flight() -> None:
    async with http_target(h2_max_streams=3, delay="20ms") as server:
        counters: Counter[str] = Counter()
        sessions = await _sessions(server.url, 8, counters=counters)
        results = await _run(sessions, 3)
        await _close(sessions)
        assert all(e is None for e, _ in results)
        assert server.served == 24
        assert counters["h2_stream_waits"] >= 5


async def test_a_request_body_waits_for_the_window_and_arrives() -> None:
    async with http_target(h2_window=1000) as server:
        session = await h2_session(server.url, method="POST", body="x" * 150_000)
        results = await back_to_back(session, 3)
        await session.close()
        assert [e for e, _ in results] == [None, None, None]
        assert server.served == 3


async def test_a_stalled_window_is_named_not_a_hang() -> None:
    async with http_target(h2_window=1000, h2_stall_window=True) as server:
        session = await h2_session(server.url, timeout=0.3 * S, method="POST", body="x" * 5000)
        await asyncio.sleep(0.1 * S)  # the server's SETTINGS and ACK have come: then silence
        error, _ = await exchange(session)
        await session.close()
        assert error is not None
        assert error.error_class is ErrorClass.TIMEOUT
        assert error.code == "h2:stalled-window"
        assert "1000 of 5000 bytes sent" in error.detail, error.detail
        assert server.served == 0


async def test_an_http1_only_server_is_one_clear_error_at_open() -> None:
    async with http_target(h2=False) as server:
        with pytest.raises(OpError) as caught:
            await h2_session(server.url)
    assert caught.value.error_class is ErrorClass.CONNECT
    assert "answered in HTTP/1" in caught.value.detail
    assert "does not speak cleartext HTTP/2" in caught.value.detail


async def test_a_server_closing_on_the_preface_is_one_clear_error() -> None:
    async with raw_server(lambda transport, data: transport.close()) as url:
        with pytest.raises(OpError) as caught:
            await h2_session(url)
    assert caught.value.error_class is ErrorClass.CONNECT
    assert "closed the connection on the HTTP/2 preface" in caught.value.detail


async def test_a_silent_server_times_out_at_open_naming_http2() -> None:
    async with raw_server(lambda transport, data: None) as url:
        with pytest.raises(OpError) as caught:
            await h2_session(url, timeout=0.3 * S)
    assert caught.value.error_class is ErrorClass.TIMEOUT
    assert "sent no HTTP/2 SETTINGS" in caught.value.detail


async def test_trailers_and_interim_responses_end_where_they_should() -> None:
    encoder = hpack.Encoder()

    def respond(stream: int) -> bytes:
        interim = encoder.encode([(":status", "103"), ("link", "</a>")])
        head = encoder.encode([(":status", "200")])
        trailers = encoder.encode([("grpc-status", "0")])
        return (
            f.frame(f.HEADERS, f.END_HEADERS, stream, interim)
            + f.frame(f.HEADERS, f.END_HEADERS, stream, head)
            + f.frame(f.DATA, 0, stream, b"body")
            + f.frame(f.HEADERS, f.END_HEADERS | f.END_STREAM, stream, trailers)
        )

    async with scripted_h2(respond) as url:
        session = await h2_session(url)
        results = await back_to_back(session, 5)
        await session.close()
    assert [e for e, _ in results] == [None] * 5


async def test_settings_and_ping_are_acknowledged_and_streams_go_on() -> None:
    seen: list[tuple[int, int, bytes]] = []

    def respond(stream: int) -> bytes:
        return f.frame(f.PING, 0, 0, b"12345678") + response(stream)

    settings = {f.SETTINGS_MAX_CONCURRENT_STREAMS: 50}
    async with scripted_h2(respond, settings, seen) as url:
        session = await h2_session(url)
        assert (await exchange(session))[0] is None
        assert (await exchange(session))[0] is None
        await session.close()
    assert (f.SETTINGS, f.ACK, b"") in seen
    assert (f.PING, f.ACK, b"12345678") in seen
    ours = next(p for k, fl, p in seen if k == f.SETTINGS and not fl)
    assert dict(f.parse_settings(ours))[f.SETTINGS_ENABLE_PUSH] == 0


@pytest.mark.parametrize(
    ("frames", "code", "detail"),
    [
        (lambda s: f.frame(f.DATA, 0, 0, b"x"), "h2:PROTOCOL_ERROR", "DATA on stream 0"),
        (lambda s: f.frame(f.SETTINGS, 0, 0, b"12345"), "h2:FRAME_SIZE_ERROR", "multiple of 6"),
        (lambda s: f.frame(f.PING, 0, 0, b"1"), "h2:FRAME_SIZE_ERROR", "PING not of 8"),
        (lambda s: f.frame(f.PUSH_PROMISE, 4, s, bytes(4)), "h2:PROTOCOL_ERROR", "PUSH_PROMISE"),
        (lambda s: f.frame(f.HEADERS, 4, s, b"\xbe"), "h2:COMPRESSION_ERROR", "no table entry"),
        (lambda s: f.frame(f.DATA, 1, s + 200, b"x"), "h2:PROTOCOL_ERROR", "never opened"),
        (
            lambda s: bytes([0, 0x50, 0]) + bytes([f.DATA, 0]) + s.to_bytes(4, "big"),
            "h2:FRAME_SIZE_ERROR",
            "above our SETTINGS_MAX_FRAME_SIZE",
        ),
    ],
)
async def test_a_malformed_frame_ends_the_connection_with_its_error(
    frames: object, code: str, detail: str
) -> None:
    async with scripted_h2(frames) as url:  # type: ignore[arg-type]
        session = await h2_session(url)
        error, _ = await exchange(session)
        await session.close()
    assert error is not None
    assert error.error_class is ErrorClass.PROTOCOL
    assert error.code == code
    assert detail in error.detail


async def test_an_oversized_header_block_is_refused_before_it_is_kept() -> None:
    """CONTINUATION frames without end: the client stops past its bound, not at memory's end."""
    chunk = b"\x00" * 16_000

    def respond(stream: int) -> bytes:
        out = f.frame(f.HEADERS, 0, stream, chunk)
        return out + f.frame(f.CONTINUATION, 0, stream, chunk) * 1000

    async with scripted_h2(respond) as url:
        session = await h2_session(url)
        error, _ = await exchange(session)
        await session.close()
    assert error is not None
    assert error.code == "h2:ENHANCE_YOUR_CALM"
    assert f"above {MAX_HEADER_BLOCK} bytes" in error.detail


async def test_a_goaway_with_an_error_fails_the_streams_it_drops_with_its_code() -> None:
    def respond(stream: int) -> bytes:
        return f.goaway(0, f.ErrorCode.ENHANCE_YOUR_CALM, b"calm down")

    async with scripted_h2(respond) as url:
        session = await h2_session(url)
        error, _ = await exchange(session)
        await session.close()
    assert error is not None
    assert error.code == "h2:ENHANCE_YOUR_CALM"
    assert "calm down" in error.detail


async def test_a_server_that_never_answers_a_stream_times_it_out_and_cancels_it() -> None:
    answered: list[int] = []

    def respond(stream: int) -> bytes:
        answered.append(stream)
        return b"" if len(answered) == 1 else response(stream)

    async with scripted_h2(respond) as url:
        session = await h2_session(url, timeout=0.3 * S)
        first = await exchange(session)
        second = await exchange(session)
        await session.close()
    assert first[0] is not None
    assert first[0].error_class is ErrorClass.TIMEOUT
    assert second[0] is None  # nothing came since: the connection was dropped, another opened
