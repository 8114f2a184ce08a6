"""``protobench sweep`` over connections against the embedded HTTP target."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from protobench.cli.sweep_cmd import render_table
from protobench.engine.sweep import Sweep, parse_axis
from tests.engine.test_sweep import fanout_model
from tests.support.cli import CliResult

# Each sweep is several full runs (start, warmup, sustain, drain, snapshot).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

SHORT = ("--warmup", "250ms", "--duration", "1s", "--interval", "250ms", "--processes", "1")


def test_sweep_over_connections_saves_three_labelled_snapshots_and_a_table(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    result = cli(
        "sweep",
        "http-get",
        "--vary",
        "connections=1,4,16",
        "--serve-opt",
        "delay=1ms",
        *SHORT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sweep sweep-")
    assert lines[1].split()[:7] == [
        "connections",
        "throughput",
        "p50",
        "p99",
        "errors",
        "gen",
        "cpu",
    ]
    rows = [line.split() for line in lines[2:5]]
    assert [row[0] for row in rows] == ["1", "4", "16"]
    assert all(row[4] == "0.00%" for row in rows)
    assert "[2/3] connections=4" in result.stderr
    listed = cli("snapshots", "list", "--json")
    snapshots = listed.json()
    assert len(snapshots) == 3
    group = lines[0].split()[1].rstrip(":")
    levels = []
    throughputs = []
    for item in snapshots:
        with gzip.open(tmp_path / item["path"], "rt") as stored:
            data = json.load(stored)
        assert data["labels"]["sweep"] == group
        assert data["labels"]["axis"] == "connections"
        levels.append(data["labels"]["level"])
        assert data["plan"]["groups"][0]["count"] == data["labels"]["level"]
        throughputs.append(data["report"]["phases"]["sustain"]["total"]["throughput"])
    assert levels == [1, 4, 16]
    # With a 1 ms delay one connection does at most ~1000/s; more connections do more.
    assert throughputs[0] < 1000
    assert throughputs[2] > throughputs[0]


def test_sweep_json_and_early_stop_on_errors(cli: Callable[..., CliResult]) -> None:
    result = cli(
        "sweep",
        "http-get",
        "--vary",
        "connections=1,2",
        "--serve-opt",
        "status=503",
        "--json",
        "--quiet",
        *SHORT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert [p["assignment"] for p in data["points"]] == [{"connections": 1}]
    assert data["points"][0]["error_rate"] == 1.0
    assert data["skipped"] == [{"connections": 2}]
    assert data["stops"] == ["connections=1: error_rate > 5% (observed 1)"]


def test_bad_levels_fail_before_any_run(cli: Callable[..., CliResult]) -> None:
    result = cli("sweep", "http-get", "--vary", "options.no_such_option=1,2")
    assert result.returncode == 2
    assert "no_such_option" in result.stderr
    assert cli("snapshots", "list", "--json").json() == []


def test_an_mqtt_fanout_sweep_shows_and_judges_the_subscribers_end_to_end_latency(
    cli: Callable[..., CliResult],
) -> None:
    """The MQTT getting-started sweep: the total mixes a local write and an end-to-end
    latency, so the table shows the subscribers' (not `-`)."""
    result = cli(
        "sweep", "mqtt-fanout", "--vary", "connections=4,8", *SHORT, "--quiet", timeout=300
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = [line.split() for line in lines[2:4]]
    assert all(row[2] != "-" and row[3] != "-" for row in rows), result.stdout
    assert "throughput, p50, p99 and the knee: op subscribe (end to end)" in result.stdout
    bad = cli("sweep", "mqtt-fanout", "--vary", "connections=4,8", "--op", "nosuch")
    assert bad.returncode == 2
    assert "--op: no group 'nosuch'" in bad.stderr
    assert "publish, subscribe" in bad.stderr


def test_the_table_marks_host_saturated_levels_and_a_knee_below_the_lowest_level() -> None:
    delivered = {10: 10_000.0, 50: 20_000.0, 200: 21_000.0}
    result = Sweep([parse_axis("connections=10,50,200")]).run(
        lambda level, _: fanout_model(level["connections"], delivered, host_busy=50)
    )
    text = render_table(result)
    [row50] = [line for line in text.splitlines() if line.startswith("50 ")]
    assert "HOST-SATURATED" in row50
    assert "HOST-SATURATED: other processes kept the host's CPU busy" in text
    assert "knee: throughput was already flat from connections=10" in text
    assert "knee: none found" not in text
