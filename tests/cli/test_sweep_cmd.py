"""``protobench sweep`` over connections against the embedded HTTP target."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

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
