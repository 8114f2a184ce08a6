"""MQTT features through the CLI against brokers we did not write: a will storm (``drop``)
counted by subscribers and by mochi-mqtt itself, and a fan-out over WebSocket counted by
amqtt. Every run is bounded (a few seconds of sustain, a subprocess timeout)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliResult
from tests.support.mochi import mochi
from tests.support.mqtt import amqtt

pytestmark = [pytest.mark.integration]

SHORT = ("--warmup", "1s", "--duration", "2s", "--json", "--quiet", "-p", "2")

WILLS = """
name = "wills"
protocol = "mqtt"
[options]
version = "5"
will_topic = "wl/{client}"
will_qos = 1
will_user_properties = {site = "b1"}
[[group]]
name = "watch"
op = "subscribe"
count = 2
topics = ["wl/#"]
qos = 1
[[group]]
name = "drop"
op = "drop"
count = 4
every = "50ms"
"""

WS_FANOUT = """
name = "ws-fanout"
protocol = "mqtt"
[[group]]
name = "sub"
op = "subscribe"
count = 2
topics = ["wsf/#"]
[[group]]
name = "pub"
op = "publish"
count = 4
every = "20ms"
topic = "wsf/{client}"
size = 64
"""


def _total(report: dict[str, Any], op: str, key: str) -> int:
    total = 0
    for phase in report["phases"].values():
        item = phase["ops"].get(op, {})
        total += (
            item.get(key, 0) if key in ("ok", "errors") else item.get("counters", {}).get(key, 0)
        )
    return total


def test_every_dropped_connection_s_will_is_counted_by_the_subscribers_and_mochi(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    profile = tmp_path / "wills.toml"
    profile.write_text(WILLS)
    with mochi(tmp_path) as broker:
        result = cli("run", str(profile), "--target", broker.url("tcp"), *SHORT, timeout=120)
        counts = broker.counts()
    assert result.returncode == 0, result.stderr
    report = result.json()
    dropped = _total(report, "drop", "ok")
    assert dropped > 20
    assert _total(report, "drop", "errors") == 0
    assert counts["wills"] == {"wl": dropped}  # the broker published one will per drop
    assert _total(report, "watch", "wills") == 2 * dropped  # each subscriber got every one
    # subscribers hold queues: the broker's memory is not divided by connections
    assert "rss_per_connection" not in (report["resources"].get("target") or {})


def test_a_websocket_fanout_counts_what_amqtt_counts(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    profile = tmp_path / "ws.toml"
    profile.write_text(WS_FANOUT)
    with amqtt(tmp_path) as broker:
        result = cli("run", str(profile), "--target", broker.ws_url, *SHORT, timeout=120)
        counts = broker.counts()
    assert result.returncode == 0, result.stderr
    report = result.json()
    published = _total(report, "pub", "ok")
    assert published > 100
    assert counts["received"]["wsf"] == published + 4  # and the end markers
    assert _total(report, "sub", "received") == _total(report, "sub", "expected") == 2 * published
    assert _total(report, "sub", "lost") == _total(report, "sub", "undelivered") == 0
