"""protobench against amqtt, an MQTT broker we did not write (Python, MQTT 3.1.1 only).

The broker runs from its own venv (see :func:`~tests.support.mqtt.amqtt`)
and counts every PUBLISH it receives and sends: our publishers' and subscribers'
counts must be the broker's. Every load is bounded in count and time.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.mqtt.sessions import ConnectSession, PublishSession, SubscribeSession
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.cli import CliResult
from tests.support.mqtt import PLUGIN, amqtt, context, publish_n, wait_for_count

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


@pytest.mark.parametrize("qos", [0, 1])
async def test_publishers_and_subscribers_count_what_amqtt_counts(tmp_path: Path, qos: int) -> None:
    with amqtt(tmp_path) as broker:
        subs: list[tuple[SubscribeSession, OpRecorder, asyncio.Task[None]]] = []
        for i in range(2):
            ctx = context(broker.url, "subscribe", i, topics=["interop/#"], qos=qos)
            session = cast(SubscribeSession, await PLUGIN.open_session(ctx))
            recorder = OpRecorder(f"sub{i}")
            subs.append((session, recorder, asyncio.create_task(session.run(recorder))))
        pubs = [
            cast(
                PublishSession,
                await PLUGIN.open_session(
                    context(broker.url, "publish", i, topic="interop/{client}", qos=qos, size=64)
                ),
            )
            for i in range(3)
        ]
        for pub in pubs:
            errors, latencies = await publish_n(pub, 200)
            assert errors == []
            assert len(latencies) == 200
            pub.stopping()
        for session, recorder, task in subs:
            await wait_for_count(recorder, "received", 600)
            for _ in range(500):  # the end markers come after the messages: at most 10 s
                if session.settled():
                    break
                await asyncio.sleep(0.02)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await session.close()
            assert recorder.counters == Counter(received=600, expected=600)
        for pub in pubs:
            await pub.close()
        # the broker's truth: 600 messages and 3 end markers in, each sent to both subscribers
        counts = broker.counts()
        assert counts["received"]["interop"] == 600 + 3
        assert counts["sent"]["interop"] == 2 * (600 + 3)
        assert counts["received"]["protobench-end"] == 3  # the copies, on the end board


async def test_an_mqtt5_client_unanswered_by_amqtt_is_told_to_try_3_1_1(
    tmp_path: Path,
) -> None:
    """amqtt, of MQTT 3.1.1 only, reads an MQTT 5 CONNECT as a 3.1.1 one: its property
    block (Maximum Packet Size, always sent) makes it wait for a client id that never
    comes instead of refusing the protocol level, so no CONNACK comes; the timeout says
    what to try."""
    with amqtt(tmp_path) as broker:
        options = {"version": "5"}
        session = ConnectSession(context(broker.url, "connect", timeout=2.0, options=options))
        with pytest.raises(OpError) as caught:
            await session.call()
        assert caught.value.error_class is ErrorClass.TIMEOUT
        assert caught.value.detail.startswith("no CONNACK within 2s (a broker of MQTT 3.1.1")
        assert 'try version = "3.1.1"' in caught.value.detail


def _totals(report: dict[str, Any], op: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for phase in report["phases"].values():
        item = phase["ops"].get(op, {})
        total["ok"] += item.get("ok", 0)
        total["errors"] += item.get("errors", 0)
        total.update(item.get("counters", {}))
    return total


PROFILE = """
name = "amqtt-{name}"
protocol = "mqtt"
warmup = "1s"
duration = "2s"
[[group]]
name = "sub"
op = "subscribe"
count = 2
topics = ["interop/#"]
qos = {qos}
[[group]]
name = "pub"
op = "publish"
count = {publishers}
every = "50ms"
inflight = {inflight}
topic = "interop/{{client}}"
qos = {qos}
size = 100
[[group]]
name = "storm"
op = "connect"
count = 2
every = "100ms"
"""


@pytest.mark.parametrize(
    ("name", "qos", "publishers", "inflight"), [("pubsub", 0, 5, 1), ("qos1", 1, 20, 10)]
)
def test_runs_through_the_cli_match_amqtt_s_counts(
    cli: Callable[..., CliResult],
    tmp_path: Path,
    name: str,
    qos: int,
    publishers: int,
    inflight: int,
) -> None:
    profile = tmp_path / f"{name}.toml"
    profile.write_text(PROFILE.format(name=name, qos=qos, publishers=publishers, inflight=inflight))
    with amqtt(tmp_path) as broker:
        result = cli("run", str(profile), "--target", broker.url, "-p", "2", "--json", "--quiet")
        assert result.returncode == 0, result.stderr
        report = result.json()
        counts = broker.counts()
    pub, sub, storm = _totals(report, "pub"), _totals(report, "sub"), _totals(report, "storm")
    assert pub["errors"] == sub["errors"] == storm["errors"] == 0
    assert pub["ok"] > 10 * publishers
    # amqtt received every message and end marker, and we received all it sent
    assert counts["received"]["interop"] == pub["ok"] + publishers
    assert counts["sent"]["interop"] == 2 * (pub["ok"] + publishers)
    assert sub["received"] == sub["expected"] == 2 * pub["ok"]
    assert sub["lost"] == sub["undelivered"] == sub["unfinished"] == 0
    # connections: one per `inflight` publishers, per process
    assert pub["connects"] == publishers // inflight
    assert storm["connects"] == storm["ok"] > 10
