"""Publish and subscribe sessions against a real mosquitto, with paho-mqtt as the reference."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast
from unittest.mock import ANY

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from protobench.engine.metrics import OpRecorder, fold, new_histogram, summary
from protobench.protocols.mqtt.payload import HEADER, stamp
from protobench.protocols.mqtt.sessions import PublishSession, SubscribeSession
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.mqtt import (
    PLUGIN,
    context,
    mosquitto,
    needs_mosquitto,
    publish_n,
    wait_for_count,
)
from tests.support.timing import MS, S, eventually

pytestmark = [pytest.mark.integration, needs_mosquitto, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


async def _subscribers(
    url: str, n: int, **params: Any
) -> list[tuple[SubscribeSession, OpRecorder, asyncio.Task[None]]]:
    out = []
    for i in range(n):
        session = cast(
            SubscribeSession, await PLUGIN.open_session(context(url, "subscribe", i, **params))
        )
        recorder = OpRecorder(f"sub{i}")
        out.append((session, recorder, asyncio.create_task(session.run(recorder))))
    return out


async def _close(subs: list[tuple[SubscribeSession, OpRecorder, asyncio.Task[None]]]) -> None:
    for session, _, task in subs:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # its end is counted as it stops
        await session.close()


@pytest.mark.parametrize(("qos", "version"), [(1, "3.1.1"), (1, "5"), (2, "5")])
async def test_fanout_with_acks_delivers_everything_once(
    tmp_path: Path, qos: int, version: str
) -> None:
    options = {"version": version}
    with mosquitto(tmp_path) as broker:
        subs = await _subscribers(broker.url, 4, topics=["fan/#"], qos=qos, options=options)
        pubs = [
            cast(
                PublishSession,
                await PLUGIN.open_session(
                    context(
                        broker.url,
                        "publish",
                        i,
                        topic="fan/{client}",
                        qos=qos,
                        size=64,
                        options=options,
                    )
                ),
            )
            for i in range(3)
        ]
        results = await asyncio.gather(*(publish_n(p, 300) for p in pubs))
        for errors, latencies in results:
            assert errors == []
            assert len(latencies) == 300
        for _, recorder, _ in subs:
            assert await wait_for_count(recorder, "received", 900) == 900
        await asyncio.sleep(100 * MS)
        total: Counter[str] = Counter()
        hist = new_histogram()
        for _, recorder, _ in subs:
            total.update(recorder.counters)
            fold(hist, recorder.latencies)
        # published x subscribers, no loss, no duplicate
        assert total == Counter(received=3600, expected=3600)
        stats = summary(hist)
        assert stats["count"] == 3600
        assert 0 < stats["p50"] <= stats["p99"] < 5_000_000  # µs: positive, under 5 s
        await _close(subs)
        for p in pubs:
            await p.close()


async def test_qos0_loss_in_a_tiny_broker_queue_is_detected(tmp_path: Path) -> None:
    with mosquitto(tmp_path, "max_queued_messages 10", "sys_interval 1") as broker:
        subs = await _subscribers(broker.url, 1, topics=["loss/#"])
        session, recorder, _ = subs[0]
        pub = cast(
            PublishSession,
            await PLUGIN.open_session(context(broker.url, "publish", topic="loss/a", size=1000)),
        )
        assert session.conn.transport is not None
        session.conn.transport.pause_reading()  # a slow subscriber: the broker must drop QoS 0
        errors, _ = await publish_n(pub, 5000)
        await asyncio.sleep(500 * MS)
        session.conn.transport.resume_reading()
        await asyncio.sleep(500 * MS)
        more, _ = await publish_n(pub, 5)  # the gap before the last messages shows
        assert errors == more == []
        counters = recorder.counters
        await eventually(
            lambda: counters.get("received", 0) + counters.get("lost", 0) >= 5005, 10 * S, "5005"
        )
        assert counters["lost"] > 0
        assert counters["received"] + counters["lost"] == 5005
        assert counters["duplicated"] == counters["out_of_order"] == 0
        # who dropped: the broker's own $SYS count, read by subscriber 0, is the loss
        assert (
            await wait_for_count(recorder, "broker_dropped", counters["lost"]) == (counters["lost"])
        )
        await _close(subs)
        await pub.close()


async def test_messages_a_backlogged_subscriber_never_got_are_undelivered(
    tmp_path: Path,
) -> None:
    with mosquitto(tmp_path) as broker:
        subs = await _subscribers(broker.url, 2, topics=["tail/#"])
        pubs = [
            cast(
                PublishSession,
                await PLUGIN.open_session(
                    context(broker.url, "publish", i, topic="tail/{client}", size=64)
                ),
            )
            for i in range(2)
        ]
        late, late_recorder, _ = subs[1]
        assert late.conn.transport is not None
        late.conn.transport.pause_reading()  # a subscriber behind a backlog at the end
        for pub in pubs:
            assert await publish_n(pub, 3000) == ([], ANY)
            pub.stopping()
        _, on_time, _ = subs[0]
        assert await wait_for_count(on_time, "received", 6000) == 6000
        await eventually(subs[0][0].settled, 10 * S, "the subscriber settled")
        assert not late.settled()  # both publishers' ends are on the board, 6000 owed
        await _close(subs)
        assert on_time.counters == Counter(received=6000, expected=6000)
        owed = late_recorder.counters
        assert owed["expected"] == 6000
        assert owed["received"] + owed["undelivered"] == 6000
        assert owed["undelivered"] > 0
        assert owed["lagging"] == 1  # and how far behind it was, in the diagnosis
        [finding] = PLUGIN.diagnose({"subscribe": owed, "publish": {"ok": 6000}})
        assert "messages not received by the end of the drain" in finding
        assert "the subscriber was " in finding
        for pub in pubs:
            await pub.close()


async def test_topic_template_size_mix_and_shared_subscriptions(tmp_path: Path) -> None:
    options = {"version": "5"}
    with mosquitto(tmp_path) as broker:
        shared = await _subscribers(broker.url, 2, topics=["$share/g/mix/#"], options=options)
        plain = await _subscribers(broker.url, 1, topics=["mix/+/+"], options=options)
        pub = cast(
            PublishSession,
            await PLUGIN.open_session(
                context(
                    broker.url,
                    "publish",
                    7,
                    topic="mix/{client}/{seq}",
                    sizes={20: 1, 100: 1},
                    options=options,
                )
            ),
        )
        errors, _ = await publish_n(pub, 400)
        assert errors == []
        assert await wait_for_count(plain[0][1], "received", 400) == 400
        assert plain[0][1].counters["lost"] == 0
        await eventually(
            lambda: sum(r.counters["received"] for _, r, _ in shared) >= 400,
            10 * S,
            "400 messages to the shared group",
        )
        shares = [r.counters["received"] for _, r, _ in shared]
        assert sum(shares) == 400  # each message to one member of the group
        assert all(r.counters["lost"] == 0 for _, r, _ in shared)  # no false loss on a share
        assert pub.mix is not None
        assert plain[0][1].bytes_in == sum(pub.mix.size_for(i) for i in range(400))
        await _close(shared + plain)
        await pub.close()


def _paho(port: int, **kwargs: Any) -> paho.Client:
    client = paho.Client(CallbackAPIVersion.VERSION2, **kwargs)
    client.connect("127.0.0.1", port)
    return client


async def test_paho_publishes_our_subscriber_receives(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        subs = await _subscribers(broker.url, 1, topics=["interop/#"], qos=1)
        recorder = subs[0][1]

        def publish() -> None:
            client = _paho(broker.port, client_id="paho-pub")
            client.loop_start()
            infos = [
                client.publish("interop/p", stamp(42, seq, time.monotonic_ns()) + b"x" * 10, qos=1)
                for seq in range(200)
            ]
            client.publish("interop/p", b"not ours", qos=1).wait_for_publish(5)
            for info in infos:
                info.wait_for_publish(5)
            client.disconnect()
            client.loop_stop()

        await asyncio.to_thread(publish)
        assert await wait_for_count(recorder, "received", 200) == 200
        await asyncio.sleep(100 * MS)
        assert recorder.counters == Counter(received=200, expected=200, foreign=1)
        assert len(recorder.latencies) == 200
        await _close(subs)


async def test_our_publisher_paho_subscriber_receives(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        got: list[bytes] = []
        subscribed = threading.Event()
        client = _paho(broker.port, client_id="paho-sub", protocol=paho.MQTTv5)
        client.on_subscribe = lambda *a: subscribed.set()
        client.on_message = lambda c, u, msg: got.append(msg.payload)
        client.subscribe("ours/#", qos=2)
        client.loop_start()
        try:
            assert await asyncio.to_thread(subscribed.wait, 5)
            pub = cast(
                PublishSession,
                await PLUGIN.open_session(
                    context(
                        broker.url,
                        "publish",
                        topic="ours/{client}",
                        qos=2,
                        size=50,
                        options={"version": "5"},
                    )
                ),
            )
            errors, latencies = await publish_n(pub, 100)
            assert errors == []
            assert len(latencies) == 100
            for _ in range(250):
                if len(got) >= 100:
                    break
                await asyncio.sleep(0.02)
            assert [HEADER.unpack_from(p)[3] for p in got] == list(range(100))
            assert {len(p) for p in got} == {50}
            assert {HEADER.unpack_from(p)[2] for p in got} == {pub.publisher}
            await pub.close()
        finally:
            client.disconnect()
            client.loop_stop()


async def test_retained_message_reaches_a_later_paho_subscriber(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        pub = cast(
            PublishSession,
            await PLUGIN.open_session(context(broker.url, "publish", topic="ret/x", retain=True)),
        )
        assert (await publish_n(pub, 1))[0] == []
        await asyncio.sleep(100 * MS)
        got: list[paho.MQTTMessage] = []
        client = _paho(broker.port, client_id="paho-late")
        client.on_message = lambda c, u, msg: got.append(msg)
        client.subscribe("ret/#")
        client.loop_start()
        try:
            for _ in range(100):
                if got:
                    break
                await asyncio.sleep(0.02)
            assert len(got) == 1
            assert got[0].retain
            assert HEADER.unpack_from(got[0].payload)[2:4] == (pub.publisher, 0)
        finally:
            client.disconnect()
            client.loop_stop()
            await pub.close()


async def test_inflight_sessions_share_a_connection(tmp_path: Path) -> None:
    with mosquitto(tmp_path) as broker:
        subs = await _subscribers(broker.url, 1, topics=["win/#"], qos=1)
        ctxs = [
            context(broker.url, "publish", i, group="win", topic="win/{client}", qos=1, inflight=20)
            for i in range(40)
        ]
        pubs = [cast(PublishSession, await PLUGIN.open_session(c)) for c in ctxs]
        assert len({id(p.conn) for p in pubs}) == 2
        results = await asyncio.gather(*(publish_n(p, 50) for p in pubs))
        assert all(errors == [] for errors, _ in results)
        assert await wait_for_count(subs[0][1], "received", 2000) == 2000
        await asyncio.sleep(100 * MS)
        assert subs[0][1].counters == Counter(received=2000, expected=2000)
        first = pubs[0].conn
        for p in pubs[:20]:
            await p.close()
        assert first.error is not None  # the last session out closed the shared connection
        for p in pubs[20:]:
            assert p.conn.error is None
            await p.close()
        await _close(subs)


@pytest.mark.parametrize("version", ["3.1.1", "5"])
async def test_a_subscriber_gets_no_packet_over_its_maximum_packet_size(
    tmp_path: Path, version: str
) -> None:
    """MQTT 5: mosquitto honours the Maximum Packet Size of our CONNECT and drops the big
    message for us; 3.1.1 has no way to say it, so our client refuses the packet itself."""
    options = {"version": version, "max_packet_size": 1024}
    with mosquitto(tmp_path) as broker:
        subs = await _subscribers(broker.url, 1, topics=["big/#"], qos=0, options=options)
        _, recorder, task = subs[0]

        def publish() -> None:
            client = _paho(broker.port, client_id="paho-big")
            client.loop_start()
            client.publish("big/p", b"x" * 2000, qos=1).wait_for_publish(5)
            client.publish("big/p", b"small", qos=1).wait_for_publish(5)
            client.disconnect()
            client.loop_stop()

        await asyncio.to_thread(publish)
        if version == "5":
            assert await wait_for_count(recorder, "foreign", 1) == 1
            assert not task.done()
        else:
            with pytest.raises(OpError) as caught:
                await asyncio.wait_for(task, 10)
            assert caught.value.error_class is ErrorClass.PROTOCOL
            assert caught.value.detail.startswith("packet over max_packet_size (1 KiB): 20")
            assert recorder.counters["foreign"] == 0
        await _close(subs)
