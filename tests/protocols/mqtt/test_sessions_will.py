"""Wills: the ``drop`` op ends connections without DISCONNECT and the broker publishes each
connection's will; our subscribers count them, paho reads their properties. Against
mosquitto and mochi-mqtt (whose own count of wills sent is the truth)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.mqtt.codec import V5, V311, Connect, Decoder, Will, encode
from protobench.protocols.mqtt.payload import HEADER, MAGIC, WILL
from protobench.protocols.mqtt.sessions import ConnectSession, SubscribeSession, connect_packet
from tests.support.mqtt import PLUGIN, context, paho_listener, peer, wait_for_count
from tests.support.timing import MS, S, eventually

pytestmark = [pytest.mark.anyio]

BROKERS = ["mosquitto", "mochi"]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


def test_a_connect_with_a_will_round_trips_in_both_versions() -> None:
    will3 = Will("w/1", b"gone", 1, True)
    packet = Connect("c1", will=will3, username="u", password=b"p")
    assert Decoder(V311).feed(encode(packet, V311)) == [packet]
    props = ((0x18, 5), (0x02, 60), (0x03, "text/plain"), (0x26, ("k", "v")))
    packet5 = Connect("c2", will=Will("w/2", b"", 2, False, props))
    assert Decoder(V5).feed(encode(packet5, V5)) == [packet5]
    # flags: will 0x04, QoS 2 << 3, clean 0x02 (no retain)
    assert encode(packet5, V5)[9] == 0x04 | 0x10 | 0x02


def test_the_options_will_goes_on_the_sessions_connections_only() -> None:
    options = {"version": "5", "will_topic": "dev/{client}/state", "will_qos": 1,
               "will_retain": True, "will_delay": "2s", "will_expiry": "1m",
               "will_content_type": "application/octet-stream",
               "will_user_properties": {"site": "b1"}}  # fmt: skip
    ctx = context("mqtt://127.0.0.1:1", "drop", 7, options=options)
    will = connect_packet(ctx.options, "c", None, 7).will  # type: ignore[arg-type]
    assert will is not None
    assert (will.topic, will.qos, will.retain) == ("dev/7/state", 1, True)
    assert will.properties == (
        (0x18, 2), (0x02, 60), (0x03, "application/octet-stream"), (0x26, ("site", "b1")),
    )  # fmt: skip
    magic, flags, index, _, _ = HEADER.unpack(will.payload)
    assert (magic, flags, index) == (MAGIC, WILL, 7)
    assert connect_packet(ctx.options, "c", None, None).will is None  # our own connections


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"will_delay": "1s", "will_topic": "w"}, "need version"),
        ({"version": "5", "will_qos": 1}, "a will needs will_topic"),
        ({"will_topic": "w/#"}, "without wildcards"),
        ({"will_topic": "w/{seq}"}, "only use the fields {client}"),
    ],
)
def test_will_options_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        context("mqtt://127.0.0.1:1", "drop", options=options)


async def _drops(url: str, n: int, options: dict[str, Any], index: int = 3) -> None:
    session = cast(
        ConnectSession, await PLUGIN.open_session(context(url, "drop", index, options=options))
    )
    for _ in range(n):
        assert await session.call() == 4


@pytest.mark.integration
@pytest.mark.parametrize("name", BROKERS)
@pytest.mark.parametrize("version", ["3.1.1", "5"])
async def test_every_dropped_connection_s_will_is_published_and_counted(
    tmp_path: Path, name: str, version: str
) -> None:
    with peer(name, tmp_path) as broker:
        ctx = context(
            broker.url, "subscribe", 0, topics=["wl/#"], qos=1, options={"version": version}
        )
        sub = cast(SubscribeSession, await PLUGIN.open_session(ctx))
        recorder = OpRecorder("sub")
        task = asyncio.create_task(sub.run(recorder))
        await _drops(
            broker.url, 40, {"version": version, "will_topic": "wl/{client}", "will_qos": 1}
        )
        assert await wait_for_count(recorder, "wills", 40) == 40
        # a DISCONNECT (the connect op) publishes no will
        await _drops(broker.url, 0, {})
        connect = ConnectSession(context(broker.url, "connect", options={"will_topic": "wl/x"}))
        await connect.call()
        await asyncio.sleep(300 * MS)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await sub.close()
        assert recorder.counters == Counter(wills=40)
        if broker.counts is not None:
            assert broker.counts()["wills"] == {"wl": 40}


@pytest.mark.integration
@pytest.mark.parametrize("name", BROKERS)
async def test_will_properties_retain_and_payload_reach_a_paho_subscriber(
    tmp_path: Path, name: str
) -> None:
    options = {"version": "5", "will_topic": "wp/{client}", "will_qos": 1, "will_retain": True,
               "will_payload": "offline", "will_expiry": "1h", "will_content_type": "text/plain",
               "will_user_properties": {"site": "b1"}}  # fmt: skip
    with peer(name, tmp_path) as broker:
        with paho_listener(broker.port, "wp/#") as heard:
            await _drops(broker.url, 3, options, index=5)
            await eventually(lambda: len(heard.messages) >= 3, 10 * S, "3 wills")
        topic, payload, retained, props = heard.messages[0]
        assert (topic, payload, retained) == ("wp/5", b"offline", False)
        assert props["UserProperty"] == [("site", "b1")]
        if name == "mochi":  # mochi-mqtt 2.7.9 keeps only a will's user properties (and delay)
            assert "ContentType" not in props
        else:
            assert props["ContentType"] == "text/plain"
            assert 3000 < props["MessageExpiryInterval"] <= 3600
        # retained: a subscriber that comes later gets it, with the retain flag
        with paho_listener(broker.port, "wp/#") as late:
            await eventually(lambda: bool(late.messages), 10 * S, "the retained will")
        assert late.messages[0][:3] == ("wp/5", b"offline", True)


@pytest.mark.integration
async def test_a_will_delay_holds_the_will_back(tmp_path: Path) -> None:
    """mosquitto waits the will delay before publishing (a lower bound only: holds on a busy
    machine, where the will can only come later)."""
    with peer("mosquitto", tmp_path) as broker, paho_listener(broker.port, "wd/#") as heard:
        options = {"version": "5", "will_topic": "wd/{client}", "will_delay": "2s",
                   "session_expiry": "10s", "clean_session": False}  # fmt: skip
        await _drops(broker.url, 1, options)
        await asyncio.sleep(1.0)
        assert heard.messages == []
        await eventually(lambda: bool(heard.messages), 15 * S, "the delayed will")
