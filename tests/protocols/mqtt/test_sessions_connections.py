"""Connection storms, credentials, idle connections, faults and TLS against real sockets."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import psutil
import pytest

from protobench.engine.metrics import OpRecorder, fold, new_histogram, summary
from protobench.hostutil import raise_fd_limit
from protobench.protocols.mqtt.codec import Connack, encode
from protobench.protocols.mqtt.sessions import (
    ConnectSession,
    IdleSession,
    PublishSession,
    SubscribeSession,
)
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.http import self_signed
from tests.support.mqtt import PLUGIN, context, mosquitto, needs_mosquitto, publish_n
from tests.support.timing import MS, S, eventually

pytestmark = [pytest.mark.integration, needs_mosquitto, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


async def test_connection_storm_of_500_gives_connack_percentiles(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        recorder = OpRecorder("connect")
        sessions = [
            cast(ConnectSession, await PLUGIN.open_session(context(broker.url, "connect", i)))
            for i in range(25)
        ]

        async def storm(session: ConnectSession) -> None:
            for _ in range(20):
                start = asyncio.get_running_loop().time()
                try:
                    await session.call()
                except OpError as exc:
                    recorder.error(exc)
                else:
                    recorder.latencies.append(
                        int((asyncio.get_running_loop().time() - start) * 1e9)
                    )

        await asyncio.gather(*(storm(s) for s in sessions))
        assert recorder.errors == {}
        hist = new_histogram()
        fold(hist, recorder.latencies)
        stats = summary(hist)
        assert stats["count"] == 500
        assert 0 < stats["p50"] <= stats["p90"] <= stats["p99"] <= stats["max"]


# mosquitto 2.0 refuses a wrong password with "not authorized" (3.1.1: 5, MQTT 5: 0x87)
@pytest.mark.parametrize(("version", "code"), [("3.1.1", "0x05"), ("5", "0x87")])
async def test_wrong_password_is_an_auth_error_with_the_reason_code(
    tmp_path: Path, version: str, code: str
) -> None:
    with mosquitto(tmp_path, users={"alice": "right"}) as broker:
        good = {"version": version, "username": "alice", "password": "right"}
        bad = {**good, "password": "wrong"}
        session = await PLUGIN.open_session(context(broker.url, "connect", options=good))
        assert await cast(ConnectSession, session).call() == 4
        recorder = OpRecorder("connect")
        session = await PLUGIN.open_session(context(broker.url, "connect", options=bad))
        for _ in range(3):
            with pytest.raises(OpError) as caught:
                await cast(ConnectSession, session).call()
            recorder.error(caught.value)
        assert caught.value.error_class is ErrorClass.AUTH
        assert caught.value.code == code
        assert recorder.error_codes == {f"auth:{code}": 3}
        with pytest.raises(OpError) as at_open:
            await PLUGIN.open_session(context(broker.url, "idle", options=bad))
        assert (at_open.value.error_class, at_open.value.code) == (ErrorClass.AUTH, code)


def _established(pid: int, port: int) -> int:
    return sum(
        1
        for c in psutil.Process(pid).net_connections("tcp")
        if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port
    )


async def test_1000_idle_connections_stay_up_with_keepalive(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        rss_before = psutil.Process(broker.pid).memory_info().rss
        limiter = asyncio.Semaphore(100)

        async def open_one(i: int) -> IdleSession:
            async with limiter:
                ctx = context(broker.url, "idle", i, options={"keepalive": "2s"}, timeout=20)
                return cast(IdleSession, await PLUGIN.open_session(ctx))

        sessions = await asyncio.gather(*(open_one(i) for i in range(1000)))
        recorder = OpRecorder("idle")
        tasks = [asyncio.create_task(s.run(recorder)) for s in sessions]
        await eventually(  # every connection pinged at least once (keepalive 2 s)
            lambda: all(s.conn.sent_packets >= 2 for s in sessions), 20 * S, "a PINGREQ on each"
        )
        assert _established(broker.pid, broker.port) == 1000
        assert psutil.Process(broker.pid).memory_info().rss > rss_before
        assert all(s.conn.sent_packets >= 2 for s in sessions)  # CONNECT + PINGREQ
        assert recorder.counters == {}
        assert recorder.errors == {}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*(s.close() for s in sessions))


async def test_5000_idle_connections_over_2_source_addresses(tmp_path: Path) -> None:
    raise_fd_limit()
    with mosquitto(tmp_path) as broker:
        limiter = asyncio.Semaphore(200)
        options = {"keepalive": "60s", "source_addresses": 2}

        async def open_one(i: int) -> IdleSession:
            async with limiter:
                ctx = context(broker.url, "idle", i, options=options, timeout=30)
                return cast(IdleSession, await PLUGIN.open_session(ctx))

        sessions = await asyncio.gather(*(open_one(i) for i in range(5000)))
        try:
            peers = Counter(
                c.raddr.ip
                for c in psutil.Process(broker.pid).net_connections("tcp")
                if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == broker.port
            )
            assert peers == {"127.0.0.1": 2500, "127.0.0.2": 2500}
            assert all(s.conn.error is None for s in sessions)
        finally:
            await asyncio.gather(*(s.close() for s in sessions))


async def test_broker_killed_mid_run_then_back(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        sub = cast(
            SubscribeSession,
            await PLUGIN.open_session(context(broker.url, "subscribe", topics=["k/#"], qos=1)),
        )
        pub = cast(
            PublishSession,
            await PLUGIN.open_session(context(broker.url, "publish", topic="k/x", qos=1)),
        )
        recorder = OpRecorder("subscribe")
        running = asyncio.create_task(sub.run(recorder))
        errors, _ = await publish_n(pub, 50)
        assert errors == []
        broker.kill()
        with pytest.raises(OpError) as lost:
            await asyncio.wait_for(running, 5)
        assert lost.value.error_class is ErrorClass.CLOSED
        assert recorder.counters["disconnects"] == 1
        errors, _ = await publish_n(pub, 1)
        assert [e.error_class for e in errors] == [ErrorClass.CLOSED]
        with pytest.raises(OpError) as refused:
            await PLUGIN.open_session(context(broker.url, "idle"))
        assert refused.value.error_class is ErrorClass.REFUSED
        broker.start()
        again = await PLUGIN.open_session(context(broker.url, "publish", topic="k/x", qos=1))
        assert (await publish_n(cast(PublishSession, again), 10))[0] == []
        await again.close()
        await pub.close()
        await sub.close()


async def test_tls_verified_unverified_and_insecure(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with mosquitto(tmp_path, tls=(cert, key)) as broker:
        ok = await PLUGIN.open_session(context(broker.url, "idle", options={"ca_file": str(cert)}))
        await ok.close()
        insecure = await PLUGIN.open_session(
            context(broker.url, "idle", options={"insecure": True})
        )
        await insecure.close()
        with pytest.raises(OpError) as caught:
            await PLUGIN.open_session(context(broker.url, "idle"))
        assert caught.value.error_class is ErrorClass.CONNECT
        assert "TLS" in caught.value.detail


@asynccontextmanager
async def fake_broker(after_connect: Callable[[asyncio.Transport], None]) -> AsyncIterator[str]:
    """A raw server that answers the first packet with CONNACK, calls ``after_connect``,
    and ignores everything else (no SUBACK, no PINGRESP)."""
    opened: list[asyncio.Transport] = []

    class Fake(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast(asyncio.Transport, transport)
            self.connected = False
            opened.append(self.transport)

        def data_received(self, data: bytes) -> None:
            if not self.connected:
                self.connected = True
                self.transport.write(encode(Connack()))
                after_connect(self.transport)

    server = await asyncio.get_running_loop().create_server(Fake, "127.0.0.1", 0)
    try:
        yield f"mqtt://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for transport in opened:
            transport.abort()


async def test_backpressure_stops_qos0_completions_until_the_socket_drains() -> None:
    stalled: list[asyncio.Transport] = []

    def stall(transport: asyncio.Transport) -> None:
        transport.pause_reading()
        stalled.append(transport)

    async with fake_broker(stall) as url:
        pub = cast(PublishSession, await PLUGIN.open_session(context(url, "publish", size=60_000)))
        sock = pub.conn.transport.get_extra_info("socket") if pub.conn.transport else None
        assert sock is not None
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        completed = 0

        def done(error: OpError | None, nbytes: int) -> None:
            nonlocal completed
            completed += 1
            if completed < 10_000:
                pub.submit(done)

        pub.submit(done)
        for _ in range(200):
            await asyncio.sleep(0.01)
            if pub.conn.paused:
                break
        assert pub.conn.paused
        at_pause = completed
        await asyncio.sleep(300 * MS)
        assert completed == at_pause < 10_000  # nothing completes while the socket is full
        stalled[0].resume_reading()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if completed > at_pause:
                break
        assert completed > at_pause
        await pub.close()


async def test_a_socket_full_for_the_whole_timeout_fails_held_qos0_publishes() -> None:
    async with fake_broker(lambda transport: transport.pause_reading()) as url:
        pub = cast(
            PublishSession,
            await PLUGIN.open_session(context(url, "publish", size=60_000, timeout=1)),
        )
        errors: list[OpError] = []

        def done(error: OpError | None, nbytes: int) -> None:
            if error is not None:
                errors.append(error)
            elif len(errors) < 1:
                pub.submit(done)

        pub.submit(done)
        for _ in range(500):
            await asyncio.sleep(0.01)
            if errors:
                break
        assert errors
        assert errors[0].error_class is ErrorClass.TIMEOUT
        assert "not reading" in errors[0].detail
        await pub.close()


async def test_keepalive_without_pingresp_times_out() -> None:
    async with fake_broker(lambda transport: None) as url:
        session = await PLUGIN.open_session(context(url, "idle", options={"keepalive": "1s"}))
        recorder = OpRecorder("idle")
        with pytest.raises(OpError) as caught:
            await asyncio.wait_for(cast(IdleSession, session).run(recorder), 5)
        assert caught.value.error_class is ErrorClass.TIMEOUT
        assert "PINGRESP" in caught.value.detail
        assert recorder.counters["disconnects"] == 1


async def test_malformed_bytes_from_the_broker_are_a_protocol_error() -> None:
    def garbage_later(transport: asyncio.Transport) -> None:
        asyncio.get_running_loop().call_later(0.2, transport.write, b"\x36\x02\x00\x00")

    async with fake_broker(garbage_later) as url:
        session = await PLUGIN.open_session(context(url, "idle"))
        with pytest.raises(OpError) as caught:
            await asyncio.wait_for(cast(IdleSession, session).run(OpRecorder("idle")), 5)
        assert caught.value.error_class is ErrorClass.PROTOCOL
        assert "QoS 3" in caught.value.detail
