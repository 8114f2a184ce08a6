"""Whole MQTT runs through the CLI: counts in the report, the broker's memory, faults.

Every run is bounded (a few seconds of sustain, a subprocess timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.cli import CliResult
from tests.support.mqtt import FANOUT_QOS1, Broker, mosquitto, needs_mosquitto
from tests.support.timing import S

pytestmark = [pytest.mark.integration, needs_mosquitto]

SHORT = ("--warmup", "1s", "--duration", "2s", "--json", "--quiet")


def _phases_sum(report: dict[str, Any], op: str, key: str) -> int:
    total = 0
    for phase in report["phases"].values():
        item = phase["ops"].get(op, {})
        total += item.get(key, 0) if key == "ok" else item.get("counters", {}).get(key, 0)
    return total


def _phases_bytes_out(report: dict[str, Any], op: str) -> int:
    return sum(phase["ops"].get(op, {}).get("bytes_out", 0) for phase in report["phases"].values())


def test_fanout_qos1_received_equals_published_times_subscribers(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    profile = tmp_path / "fan.toml"
    profile.write_text(FANOUT_QOS1)
    result = cli("run", str(profile), "-p", "2", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["target_kind"].startswith("mosquitto ")
    published = _phases_sum(report, "pub", "ok")
    assert published > 300
    # Exact: the drain lasts until every subscriber has every publisher's end marker.
    assert _phases_sum(report, "sub", "received") == published * 4
    assert _phases_sum(report, "sub", "expected") == published * 4
    for name in ("lost", "duplicated", "out_of_order", "foreign", "undelivered", "unfinished"):
        assert _phases_sum(report, "sub", name) == 0
    # the embedded broker's own dropped count was read, and is 0
    assert report["phases"]["drain"]["ops"]["sub"]["counters"]["broker_dropped"] == 0
    # 4 subscribers, the $SYS watch of subscriber 0 and one end board per process (2);
    # 5 publishers on their own connections
    assert _phases_sum(report, "sub", "connects") == 4 + 1 + 2
    assert _phases_sum(report, "pub", "connects") == 5
    # Bytes out: each PUBLISH of 64 B to t/fan/N at QoS 1 (MQTT 3.1.1) is 2 B of fixed
    # header, 2 + 7 B of topic, 2 B of packet id and the payload; each publisher's end
    # marker carries 20 B; a subscriber acknowledges each message with a 4 B PUBACK.
    publish, end = 2 + 2 + 7 + 2 + 64, 2 + 2 + 7 + 2 + 20
    assert _phases_bytes_out(report, "pub") == published * publish + 5 * end
    assert _phases_bytes_out(report, "sub") == 4 * (published * 4 + 5 * 4)
    sub = report["phases"]["sustain"]["ops"]["sub"]
    assert 0 < sub["latency_us"]["p50"] <= sub["latency_us"]["p99"] < 5_000_000
    assert Path(report["snapshot"]).is_file()


def test_the_throughput_profile_delivers_every_message_it_publishes(
    cli: Callable[..., CliResult],
) -> None:
    result = cli("run", "mqtt-throughput", *SHORT, timeout=180)
    report = result.json()
    published = _phases_sum(report, "publish", "ok")
    assert published > 1000
    expected = _phases_sum(report, "subscribe", "expected")
    received = _phases_sum(report, "subscribe", "received")
    undelivered = _phases_sum(report, "subscribe", "undelivered")
    lost = _phases_sum(report, "subscribe", "lost")
    # Every copy is accounted for, whatever the machine's speed: received, lost on the way,
    # or still undelivered at the end of the drain (back-to-back publishers once left
    # millions invisible).
    assert expected == published * 10
    assert received + lost + undelivered == expected
    assert _phases_sum(report, "subscribe", "unfinished") == 0
    assert result.returncode == (0 if lost == 0 else 1), result.stderr


def test_idle_connections_report_the_brokers_memory(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "mqtt-connections", *SHORT, timeout=180)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["phases"]["sustain"]["total"]["errors"] == 0
    target = report["resources"]["target"]
    assert report["target_kind"].startswith("mosquitto ")
    assert target["fds_peak"] >= 1000  # the sampled process holds the 1000 sockets: mosquitto
    assert target["rss_per_connection"] >= 0  # mosquitto grows by ~1 KB per idle connection
    assert target["connections"] >= 1000  # each idle session is a connection of its own


def test_connection_storm_and_wrong_password_through_the_cli(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    profile = tmp_path / "storm.toml"
    profile.write_text('name = "storm"\nprotocol = "mqtt"\n[[group]]\nop = "connect"\ncount = 8\n')
    with mosquitto(tmp_path / "broker", users={"alice": "right"}) as broker:
        ok = cli("run", str(profile), "--target", broker.url, "-p", "1", *SHORT)
        bad = cli(
            "run", str(profile), "--target", broker.url, "-p", "1",
            "--opt", "username=alice", "--opt", "password=wrong", *SHORT,
        )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    storm = ok.json()["phases"]["sustain"]["ops"]["connect"]
    assert storm["ok"] > 100
    assert storm["errors"] == 0
    assert storm["latency_us"]["p50"] <= storm["latency_us"]["p99"]
    refused = bad.json()["phases"]["sustain"]["ops"]["connect"]
    assert refused["ok"] == 0
    assert refused["errors_by_class"] == {"auth": refused["errors"]}
    assert refused["error_codes"] == {"auth:0x05": refused["errors"]}
    assert "wrong" not in bad.stdout
    assert "wrong" not in Path(bad.json()["snapshot"]).read_bytes().decode(errors="replace")


def _kill_in_sustain(broker: Broker) -> None:
    """Kill the broker 2 s after the run's 4 sessions are connected (the run has no warmup:
    its sustain begins once they are, and lasts 4 s)."""
    deadline = time.monotonic() + 60 * S
    while time.monotonic() < deadline:
        connected = [
            c
            for c in psutil.Process(broker.pid).net_connections("tcp")
            if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == broker.port
        ]
        if len(connected) >= 4:
            break
        time.sleep(0.05)
    time.sleep(2.0)
    broker.kill()


def test_broker_killed_mid_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    profile = tmp_path / "kill.toml"
    profile.write_text(
        """
name = "kill"
protocol = "mqtt"
thresholds = ["error_rate < 0.5%"]
[[group]]
name = "sub"
op = "subscribe"
count = 2
topics = ["k/#"]
[[group]]
name = "pub"
op = "publish"
count = 2
qos = 1
topic = "k/{client}"
"""
    )
    with mosquitto(tmp_path / "broker") as broker:
        killer = threading.Thread(target=_kill_in_sustain, args=(broker,))
        killer.start()
        result = cli(
            "run", str(profile), "--target", broker.url, "-p", "1", *SHORT, "--duration", "4s",
            "--warmup", "0s",
        )  # fmt: skip
        killer.join()
    report = result.json()
    verdicts = report["verdicts"]
    expected = 0 if verdicts["thresholds_passed"] and verdicts["checks_passed"] else 1
    assert result.returncode == expected, result.stderr
    assert report["phases"]["sustain"]["total"]["down_s"] > 0  # the sessions were down a while
    sustain = report["phases"]["sustain"]["ops"]
    assert _phases_sum(report, "pub", "ok") > 0
    assert set(sustain["pub"]["errors_by_class"]) <= {"closed", "refused"}
    assert sustain["pub"]["errors_by_class"]
    assert sustain["sub"]["errors_by_class"].get("closed", 0) >= 1
    assert sustain["sub"]["counters"]["disconnects"] == 2
    assert sustain["pub"]["counters"]["reconnects"] >= 1
    assert Path(report["snapshot"]).is_file()
