"""MQTT over WebSocket (``ws://``, ``wss://``) against brokers we did not write.

Debian's mosquitto 2.0.11 cannot serve a ``protocol websockets`` listener here
(its bundled libwebsockets binds ``::`` and then exits: "Unable to start any
listening sockets"), so the WebSocket peers are amqtt (Python) and mochi-mqtt
(Go), whose own PUBLISH counts are the truth. Every load is bounded.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
import websockets.asyncio.server

from protobench.engine.metrics import OpRecorder
from protobench.protocols.mqtt.sessions import ConnectSession, PublishSession, SubscribeSession
from protobench.tlsutil import generate
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.mochi import mochi
from tests.support.mqtt import PLUGIN, amqtt, context, publish_n, wait_for_count
from tests.support.timing import S, eventually

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


async def _pubsub(url: str, qos: int, count: int, **options: Any) -> Counter[str]:
    """One subscriber and two publishers on ``url``; the subscriber's counters once settled."""
    sub_ctx = context(url, "subscribe", 0, topics=["wsx/#"], qos=qos, options=options)
    sub = cast(SubscribeSession, await PLUGIN.open_session(sub_ctx))
    recorder = OpRecorder("sub")
    task = asyncio.create_task(sub.run(recorder))
    pubs = [
        cast(
            PublishSession,
            await PLUGIN.open_session(
                context(url, "publish", i, topic="wsx/{client}", qos=qos, size=80, options=options)
            ),
        )
        for i in range(2)
    ]
    for pub in pubs:
        errors, latencies = await publish_n(pub, count)
        assert errors == []
        assert len(latencies) == count
        pub.stopping()
    # amqtt is a Python broker: on a busy machine its backlog takes a while to drain
    await wait_for_count(recorder, "received", 2 * count, within=60 * S)
    await eventually(sub.settled, 30 * S, "the subscriber settled (end markers in)")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await sub.close()
    for pub in pubs:
        await pub.close()
    return recorder.counters


@pytest.mark.parametrize("qos", [0, 1])
async def test_pubsub_over_amqtt_s_websocket_listener_counts_what_it_counts(
    tmp_path: Path, qos: int
) -> None:
    with amqtt(tmp_path) as broker:
        counters = await _pubsub(broker.ws_url, qos, 300)
        counts = broker.counts()
    assert counters == Counter(received=600, expected=600)
    assert counts["received"]["wsx"] == 600 + 2  # and the end markers
    assert counts["sent"]["wsx"] == 600 + 2


@pytest.mark.parametrize("version", ["3.1.1", "5"])
async def test_pubsub_over_mochi_s_websocket_listener_counts_what_it_counts(
    tmp_path: Path, version: str
) -> None:
    with mochi(tmp_path) as broker:
        counters = await _pubsub(broker.url("ws"), 1, 300, version=version)
        counts = broker.counts()
    assert counters == Counter(received=600, expected=600)
    assert counts["received"]["wsx"] == 600 + 2
    assert counts["sent"]["wsx"] == 600 + 2


async def test_wss_with_a_client_certificate_against_mochi_requiring_one(tmp_path: Path) -> None:
    pki = generate(tmp_path / "pki", ["server", "client"])
    client = pki.leaves["client"]
    mutual = {"ca_file": str(pki.ca.cert), "cert_file": str(client.cert),
              "key_file": str(client.key)}  # fmt: skip
    with mochi(tmp_path, pki) as broker:
        counters = await _pubsub(broker.url("wss"), 1, 100, **mutual)
        assert counters == Counter(received=200, expected=200)
        bare = ConnectSession(
            context(broker.url("wss"), "connect", options={"ca_file": str(pki.ca.cert)})
        )
        with pytest.raises(OpError) as refused:
            await bare.call()
        counts = broker.counts()
    assert refused.value.error_class in (ErrorClass.CONNECT, ErrorClass.CLOSED)
    assert counts["received"]["wsx"] == 200 + 2


async def test_a_websocket_server_that_does_not_choose_mqtt_is_a_protocol_error() -> None:
    """A plain WebSocket echo server (websockets') accepts the upgrade without a subprotocol."""

    async def echo(ws: websockets.asyncio.server.ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    async with websockets.asyncio.server.serve(echo, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        session = ConnectSession(context(f"ws://127.0.0.1:{port}/mqtt", "connect", timeout=5 * S))
        with pytest.raises(OpError) as caught:
            await session.call()
    assert caught.value.error_class is ErrorClass.PROTOCOL
    assert "subprotocol none, not 'mqtt'" in str(caught.value)
