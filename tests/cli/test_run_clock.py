"""Whole runs on each clock: what the report says of its clock, the open model's lazy reads,
and the one-line notice where the kernel's clock cannot be had."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protobench.protocols.timestamps.clock import probe
from tests.support.cli import CliResult
from tests.support.http_server import http_target
from tests.support.mqtt import mosquitto, needs_mosquitto
from tests.support.nginx import nginx

pytestmark = pytest.mark.integration

RUN = ("--warmup", "0s", "--processes", "1", "--json", "--quiet")
kernel_clock = pytest.mark.skipif(
    not probe().receive, reason=f"no kernel timestamps here: {probe().reason}"
)


def _all_ok(report: dict[str, Any]) -> int:
    return sum(phase["total"]["ok"] for phase in report["phases"].values())


@kernel_clock
def test_the_open_model_reads_replies_at_its_next_send_and_loses_none(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """1,000/s: a reply waits in its socket for the next send's wake-up, 1 ms later, so the
    generator's delay is hundreds of µs (read on arrival it would be tens) while the latency
    is the kernel's; every response nginx wrote is counted once, the last ones at the end."""
    hello = 'location / { return 200 "Hello, World!"; }'
    with nginx(tmp_path / "nginx", hello) as server:
        result = cli(
            "run", "http-get", "--target", server.url + "/", "-c", "8", "--rate", "1000/s",
            "--duration", "2s", *RUN,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["clock"] == {"setting": "kernel", "receive": "kernel", "send": "kernel"}
    assert _all_ok(report) == len(server.requests())
    sustain = report["phases"]["sustain"]["total"]
    assert sustain["errors"] == 0
    delay = sustain["generator_delay_us"]
    assert delay["count"] == sustain["ok"]
    assert delay["p50"] >= 150, delay
    assert sustain["latency_uncorrected_us"]["p50"] < delay["p50"], sustain


def test_the_user_clock_reports_itself_and_no_generator_delay(
    cli: Callable[..., CliResult],
) -> None:
    with http_target() as target:
        result = cli(
            "run", "http-get", "--target", target.url, "-c", "2", "--duration", "1s",
            "--clock", "user", *RUN,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["clock"] == {"setting": "user", "receive": "user", "send": "user"}
    assert "generator_delay_us" not in report["phases"]["sustain"]["total"]
    assert not [n for n in report["notices"] if n["kind"] == "clock"]


def test_a_protocol_without_the_kernel_clock_says_so_in_one_line(
    cli: Callable[..., CliResult],
) -> None:
    """Haystack's WebSocket ops run on the websockets library, not on a stamped socket."""
    result = cli("run", "haystack-ws", "-c", "2", "--duration", "1s", *RUN)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["clock"]["setting"] == "kernel"
    assert report["clock"]["receive"] == "user"
    (notice,) = [n for n in report["notices"] if n["kind"] == "clock"]
    assert "haystack plugin does not read the kernel's timestamps" in notice["message"]
    assert "\n" not in notice["message"]


def _run_on(
    cli: Callable[..., CliResult], profile: str, clock: str, *target: str
) -> dict[str, Any]:
    result = cli(
        "run", profile, *target, "--duration", "1500ms", "--clock", clock, *RUN
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = result.json()
    assert _all_ok(report) > 0, report["phases"]
    return report


def _on_each_clock(cli: Callable[..., CliResult], profile: str, *target: str) -> None:
    """The kernel's clock on every session, with the generator's delay beside the latency;
    ``--clock user`` says so, without a delay nor a notice."""
    kernel = _run_on(cli, profile, "kernel", *target)
    assert kernel["clock"] == {"setting": "kernel", "receive": "kernel", "send": "kernel"}
    assert not [n for n in kernel["notices"] if n["kind"] == "clock"], kernel["notices"]
    assert kernel["phases"]["sustain"]["total"]["generator_delay_us"]["count"] > 0
    user = _run_on(cli, profile, "user", *target)
    assert user["clock"] == {"setting": "user", "receive": "user", "send": "user"}
    assert "generator_delay_us" not in user["phases"]["sustain"]["total"]
    assert not [n for n in user["notices"] if n["kind"] == "clock"], user["notices"]


def _bacnet_profile(directory: Path) -> str:
    """ReadProperty on 2 lanes and WriteProperty on 1 (the lean client's ops)."""
    profile = directory / "bip.toml"
    profile.write_text(
        'name = "bip"\nprotocol = "bacnet-ip"\ntarget = "embedded"\n'
        '[[group]]\nop = "read-property"\ncount = 2\nobjects = ["analog-input:*"]\n'
        'property = "present-value"\n'
        '[[group]]\nop = "write-property"\ncount = 1\nobjects = ["analog-value:1"]\n'
        'property = "present-value"\nvalues = [72.5, 68.0]\n'
    )
    return str(profile)


@kernel_clock
@pytest.mark.parametrize("protocol", ["websocket", "bacnet-ip"])
def test_websocket_and_bacnet_ip_in_the_open_model_read_replies_at_the_next_send(
    cli: Callable[..., CliResult], tmp_path: Path, protocol: str
) -> None:
    """As HTTP's: at 1,000/s replies wait for the next send's wake-up (the generator's delay
    is hundreds of µs; read on arrival it would be tens), not in the latency."""
    profile = "ws-echo" if protocol == "websocket" else _bacnet_profile(tmp_path)
    sessions = ("-c", "8") if protocol == "websocket" else ()
    result = cli(
        "run", profile, *sessions, "--rate", "1000/s", "--duration", "2s", *RUN
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["clock"] == {"setting": "kernel", "receive": "kernel", "send": "kernel"}
    sustain = report["phases"]["sustain"]["total"]
    assert sustain["ok"] >= 1000, sustain
    assert sustain["errors"] == 0, sustain
    delay = sustain["generator_delay_us"]
    assert delay["count"] == sustain["ok"]
    assert delay["p50"] >= 150, delay


@kernel_clock
def test_websocket_reads_the_kernel_s_clock_or_the_user_s_when_asked(
    cli: Callable[..., CliResult],
) -> None:
    """Echoes against the embedded target (websockets' server)."""
    _on_each_clock(cli, "ws-echo")


@kernel_clock
def test_bacnet_ip_reads_the_kernel_s_clock_or_the_user_s_when_asked(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """The property services against the embedded target (bac-py's device); ``cov`` runs on
    bac-py's own client and keeps the user clock (the built-in profile's clock is mixed)."""
    _on_each_clock(cli, _bacnet_profile(tmp_path))


@kernel_clock
@needs_mosquitto
def test_mqtt_reads_the_kernel_s_clock_or_the_user_s_when_asked(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Publishers (QoS 1 to PUBACK) and a subscriber (end to end) against mosquitto."""
    profile = tmp_path / "mqtt.toml"
    profile.write_text(
        'name = "mq"\nprotocol = "mqtt"\ntarget = "embedded"\n'
        '[[group]]\nop = "subscribe"\ncount = 1\ntopics = ["clock/#"]\n'
        '[[group]]\nop = "publish"\ncount = 2\nqos = 1\ntopic = "clock/{client}"\n'
    )
    with mosquitto(tmp_path / "broker") as broker:
        _on_each_clock(cli, str(profile), "--target", broker.url)
