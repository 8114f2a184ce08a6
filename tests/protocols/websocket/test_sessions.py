"""websocket sessions against the embedded echo target and small real servers."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from protobench.engine.metrics import OpRecorder
from protobench.hostutil import free_port
from protobench.protocols.base import CallbackSession, StreamSession
from protobench.protocols.websocket.codec import FastCodec, SansIOCodec
from protobench.protocols.websocket.plugin import WebSocketProtocol
from protobench.protocols.websocket.sessions import EchoSession, SubscribeSession
from protobench.targets.ws import WsEchoTarget
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally
from tests.support.echo import drive, open_session, serving
from tests.support.hostile_sizes import hostile
from tests.support.timing import MS

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
PLUGIN = WebSocketProtocol()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _stats(url: str) -> dict[str, int]:
    async with httpx.AsyncClient() as client:
        reply = await client.get(url.replace("ws://", "http://", 1) + "stats")
    data: dict[str, int] = reply.json()
    return data


async def _echo_sessions(
    url: str, count: int, sent: Tally | None = None, **params: Any
) -> list[CallbackSession]:
    sessions = []
    for index in range(count):
        session = await open_session(PLUGIN, url, "echo", index, sent=sent, **params)
        assert isinstance(session, CallbackSession)
        sessions.append(session)
    return sessions


async def _close(sessions: list[Any]) -> None:
    for session in sessions:
        await session.close()


@pytest.mark.parametrize("mode", ["binary", "text"])
async def test_every_echo_is_verified_and_both_sides_count_the_same(mode: str) -> None:
    sent = Tally()
    async with serving(WsEchoTarget()) as target:
        sessions = await _echo_sessions(
            target.url, 4, sent, payload="25:30%, 200:50%, 1400:20%", mode=mode
        )
        outcome = await drive(sessions, 300)
        await _close(sessions)
        stats = await _stats(target.url)
    assert outcome.errors == {}
    assert outcome.ok == 1200
    assert stats["messages"] == 1200
    assert stats["corrupted"] == 0
    expected_bytes = 4 * (300 * 0.3 * 25 + 300 * 0.5 * 200 + 300 * 0.2 * 1400)
    assert outcome.nbytes == pytest.approx(expected_bytes, rel=0.05)
    assert sent.n == outcome.nbytes, "an echo brings back the payload it was sent"
    assert all(isinstance(s, EchoSession) and isinstance(s.conn.codec, FastCodec) for s in sessions)


async def test_corrupt_every_n_gives_exactly_that_many_validation_errors() -> None:
    async with serving(WsEchoTarget(), corrupt_every=7) as target:
        sessions = await _echo_sessions(target.url, 3, mode="text")
        outcome = await drive(sessions, 200)
        await _close(sessions)
        stats = await _stats(target.url)
    assert stats["messages"] == 600
    assert stats["corrupted"] == 600 // 7
    assert outcome.errors == {"validation": 600 // 7}
    assert outcome.ok == 600 - 600 // 7
    assert "differs from what was sent" in outcome.messages[0]


async def test_permessage_deflate_goes_through_websockets_codec() -> None:
    async with serving(WsEchoTarget()) as target:
        sessions = await _echo_sessions(
            target.url, 2, payload=3000, mode="text", options={"compression": True}
        )
        outcome = await drive(sessions, 50)
        await _close(sessions)
    assert outcome.errors == {}
    assert outcome.ok == 100
    assert all(
        isinstance(s, EchoSession) and isinstance(s.conn.codec, SansIOCodec) for s in sessions
    )


async def test_delay_is_a_lower_bound_of_the_round_trip() -> None:
    async with serving(WsEchoTarget(), delay="50ms") as target:
        sessions = await _echo_sessions(target.url, 1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        outcome = await drive(sessions, 3)
        elapsed = loop.time() - started
        await _close(sessions)
    assert outcome.ok == 3
    assert elapsed >= 0.15


async def test_pipelined_messages_each_wait_their_own_delay() -> None:
    """Five messages sent at once come back 100 ms after they were sent, in order: the
    delays do not add up (it used to sleep once per message in turn: 500 ms)."""
    async with serving(WsEchoTarget(), delay="100ms") as target, connect(target.url) as ws:
        loop = asyncio.get_running_loop()
        started = loop.time()
        for index in range(5):
            await ws.send(f"m{index}")
        echoes = [await ws.recv() for _ in range(5)]
        elapsed = loop.time() - started
    assert echoes == [f"m{index}" for index in range(5)]
    assert 0.1 <= elapsed < 0.45  # one delay, however late; five in turn would be 0.5


async def test_a_late_echo_after_a_timeout_is_dropped_not_counted() -> None:
    async def slow_first(ws: ServerConnection) -> None:
        """Hold the first message until the second arrives, then echo both in order."""
        first = await ws.recv()
        second = await ws.recv()
        await ws.send(first)
        await ws.send(second)
        async for message in ws:
            await ws.send(message)

    async with serve(slow_first, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        (session,) = await _echo_sessions(f"ws://127.0.0.1:{port}/", 1, timeout=0.2)
        first = await drive([session], 1)
        second = await drive([session], 3)
        await session.close()
    assert first.errors == {"timeout": 1}
    assert "no echo within 0.2s" in first.messages[0]
    assert second.errors == {}
    assert second.ok == 3


async def test_server_going_away_is_closed_then_refused() -> None:
    async with serving(WsEchoTarget()) as target:
        (session,) = await _echo_sessions(target.url, 1)
        assert (await drive([session], 5)).ok == 5
    outcome = await drive([session], 2)
    assert outcome.errors == {"closed": 2}
    await session.close()
    with pytest.raises(OpError) as info:
        await open_session(PLUGIN, target.url, "echo")
    assert info.value.error_class is ErrorClass.REFUSED


async def test_refused_and_rejected_handshakes() -> None:
    with pytest.raises(OpError) as info:
        await open_session(PLUGIN, f"ws://127.0.0.1:{free_port()}/", "echo", timeout=2.0)
    assert info.value.error_class is ErrorClass.REFUSED

    def forbid(connection: ServerConnection, request: Request) -> Response:
        return connection.respond(403, "no\n")

    async with serve(lambda ws: ws.wait_closed(), "127.0.0.1", 0, process_request=forbid) as server:
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(OpError) as info:
            await open_session(PLUGIN, f"ws://127.0.0.1:{port}/", "echo")
    assert (info.value.error_class, info.value.code) == (ErrorClass.AUTH, "403")
    assert "HTTP 403" in str(info.value)


async def _run_for(session: StreamSession, recorder: OpRecorder, seconds: float) -> None:
    task = asyncio.create_task(session.run(recorder))
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_send_counts_sent_and_verified_echoes() -> None:
    async with serving(WsEchoTarget()) as target:
        session = await open_session(PLUGIN, target.url, "send", payload=100)
        assert isinstance(session, StreamSession)
        recorder = OpRecorder("send")
        await _run_for(session, recorder, 0.5)
        sent = recorder.counters["sent"]
        for _ in range(100):
            if recorder.counters["echoed"] == sent:
                break
            await asyncio.sleep(0.05)
        await session.close()
        stats = await _stats(target.url)
    assert sent > 0
    assert recorder.counters["echoed"] == sent == stats["messages"]
    assert recorder.flush().bytes_out == 100 * sent
    assert "bytes_sent" not in recorder.counters
    assert not recorder.errors
    assert len(recorder.latencies) == 0


async def test_send_never_exceeds_its_rate() -> None:
    async with serving(WsEchoTarget()) as target:
        session = await open_session(PLUGIN, target.url, "send", payload=50, rate="200/s")
        assert isinstance(session, StreamSession)
        recorder = OpRecorder("send")
        loop = asyncio.get_running_loop()
        started = loop.time()
        await _run_for(session, recorder, 0.6)
        elapsed = loop.time() - started
        await session.close()
    assert 0 < recorder.counters["sent"] <= 200 * elapsed + 1


async def test_subscribe_counts_stamped_pushes_without_loss() -> None:
    async with serving(WsEchoTarget(), push_rate="200/s", push_size=32) as target:
        session = await open_session(PLUGIN, target.url, "subscribe", path="/push", stamped=True)
        assert isinstance(session, StreamSession)
        recorder = OpRecorder("subscribe")
        await _run_for(session, recorder, 0.5)
        await session.close()
    received = recorder.counters["received"]
    assert received > 0
    assert len(recorder.latencies) == received
    assert recorder.bytes_in == 32 * received
    assert recorder.counters["lost"] == 0
    assert recorder.counters["reordered"] == 0
    assert not recorder.errors


async def test_subscribe_raises_closed_when_the_server_goes() -> None:
    async with serving(WsEchoTarget(), push_rate="50/s") as target:
        session = await open_session(PLUGIN, target.url, "subscribe", path="/push")
        assert isinstance(session, StreamSession)
        task = asyncio.create_task(session.run(OpRecorder("subscribe")))
        await asyncio.sleep(100 * MS)
    with pytest.raises(OpError) as info:
        async with asyncio.timeout(10):
            await task
    assert info.value.error_class is ErrorClass.CLOSED
    await session.close()


async def test_headers_and_subprotocols_reach_the_server() -> None:
    def require_token(connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Authorization") != "Bearer t0ken":
            return connection.respond(401, "token please\n")
        return None

    async def echo(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    async with serve(
        echo, "127.0.0.1", 0, process_request=require_token, subprotocols=["v2.echo"]
    ) as server:
        url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        with pytest.raises(OpError) as info:
            await open_session(PLUGIN, url, "echo")
        options = {"headers": {"Authorization": "Bearer t0ken"}, "subprotocols": ["v2.echo"]}
        session = await open_session(PLUGIN, url, "echo", options=options)
        assert isinstance(session, EchoSession)
        assert session.conn.subprotocol == "v2.echo"
        outcome = await drive([session], 10)
        await session.close()
    assert (info.value.error_class, info.value.code) == (ErrorClass.AUTH, "401")
    assert outcome.ok == 10


async def test_connections_spread_over_the_source_addresses_given_and_keep_no_handshake() -> None:
    async with serving(WsEchoTarget()) as target:
        options = {"source_addresses": ["127.0.0.3", "127.0.0.4"]}
        sessions = [
            await open_session(
                PLUGIN, target.url, "subscribe", i, path="/", stamped=False, options=options
            )
            for i in range(300)
        ]
        stats = await _stats(target.url)
        sources = Counter(
            s.conn.transport.get_extra_info("sockname")[0]
            for s in sessions
            if isinstance(s, SubscribeSession) and s.conn.transport is not None
        )
        kept = [s.conn.client for s in sessions if isinstance(s, SubscribeSession)]
        await _close(sessions)
    assert kept == [None] * 300  # no handshake state kept by an open connection
    assert stats["connections"] == 300
    assert sources == {"127.0.0.3": 150, "127.0.0.4": 150}


async def test_a_frame_claiming_2_63_bytes_with_the_handshake_fails_the_open_as_protocol() -> None:
    """The frame comes in the handshake's own read: the open fails with the frame's error
    (not a local RuntimeError on a closed transport)."""
    with hostile("ws-huge-frame", lifetime=30) as server, pytest.raises(OpError) as raised:
        await open_session(PLUGIN, f"ws://127.0.0.1:{server.port}/", "echo")
    assert raised.value.error_class is ErrorClass.PROTOCOL
    assert "frame length over max_size (16 MiB): 9223372036854775807 B" in raised.value.detail


async def test_a_deflate_bomb_is_one_protocol_error_that_ends_the_connection() -> None:
    """The echo comes back as 64 MiB once inflated: a protocol error that ends the
    connection (``lost``: the engine reopens the session, it does not fail again at once)."""
    with hostile("ws-bomb", lifetime=30) as server:
        url = f"ws://127.0.0.1:{server.port}/"
        session = await open_session(PLUGIN, url, "echo", options={"compression": True})
        assert isinstance(session, CallbackSession)
        answered: asyncio.Future[OpError | None] = asyncio.get_running_loop().create_future()
        try:
            session.submit(lambda error, _nbytes: answered.set_result(error))
            async with asyncio.timeout(30):
                error = await answered
        finally:
            await session.close()
    assert error is not None
    assert error.error_class is ErrorClass.PROTOCOL
    assert error.detail.startswith("frame length over max_size (16 MiB)"), error
    assert error.lost
