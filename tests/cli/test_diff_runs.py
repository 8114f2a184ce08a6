"""``protobench diff`` and ``snapshots export`` on real runs against the embedded HTTP target.

Three short runs (warmup 1s, sustain 3s, 250 ms intervals: 12 samples a
side) are shared by the tests of this module: two of one profile, and one of
another profile whose target answers after 5 ms instead of 1 ms. The profile
uses the open model at a fixed rate, with more sessions than requests in
flight, so the throughput of two runs of the same profile is set by the
schedule, not by how busy the shared machine happens to be: a closed-model
throughput on a loaded 2-core box moves by tens of percent between runs,
which is a real change the test would rightly flag. Latency changes (the
target's delay) are measured either way.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from protobench.engine.metrics import new_histogram, summary
from tests.support.cli import CliResult, run_cli

# The module fixture runs three benchmarks; a loaded machine needs more than 120 s.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

PROFILE = """\
name = "diff-http"
protocol = "http"
description = "{description}"
target = "embedded"
warmup = "1s"
duration = "3s"
interval = "250ms"
processes = 1
rate = "200/s"

[serve]
delay = "{delay}"

[[group]]
name = "get"
op = "request"
count = 16
method = "GET"
path = "/"
"""


def _run(cwd: Path, *args: str) -> str:
    result = run_cli(["run", *args, "--json", "--quiet"], cwd, timeout=180)
    assert result.returncode == 0, result.stderr
    return str(result.json()["snapshot"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cwd = tmp_path_factory.mktemp("diff-http")
    (cwd / "fast.toml").write_text(PROFILE.format(description="GET / at 200/s", delay="1ms"))
    (cwd / "slow.toml").write_text(PROFILE.format(description="a slower target", delay="5ms"))
    return {
        "cwd": cwd,
        "first": _run(cwd, "fast.toml"),
        "second": _run(cwd, "fast.toml"),
        "slow": _run(cwd, "slow.toml"),
    }


def _diff(runs: dict[str, Any], *args: str) -> CliResult:
    return run_cli(["diff", *args], runs["cwd"])


def _row(data: dict[str, Any], op: str, metric: str) -> dict[str, Any]:
    return next(r for r in data["rows"] if r["op"] == op and r["metric"] == metric)


def test_two_runs_of_the_same_profile_show_no_throughput_change(runs: dict[str, Any]) -> None:
    result = _diff(runs, runs["first"], runs["second"], "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["warnings"] == []
    row = _row(data, "get", "throughput")
    assert row["significant"] is False
    assert row["base"]["n"] >= 10
    assert row["new"]["n"] >= 10
    assert row["base"]["median"] == pytest.approx(200, rel=0.15)
    text = _diff(runs, runs["first"], runs["second"], "--metric", "throughput")
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith("get "))
    assert "~ (p=" in line


def test_a_slower_target_raises_p50_significantly_and_trips_the_gate(
    runs: dict[str, Any],
) -> None:
    result = _diff(runs, runs["first"], runs["slow"], "--fail-on", "p50:+10%", "--json")
    assert result.returncode == 1, result.stderr
    data = result.json()
    p50 = _row(data, "TOTAL", "p50")
    assert p50["significant"] is True
    assert p50["p_value"] < 0.05
    assert p50["change"] > 0.5  # 1 ms -> 5 ms of delay
    assert p50["phase"]["new"] > 5000
    assert data["gates"][0]["failed"] is True
    text = _diff(runs, runs["first"], runs["slow"], "--fail-on", "p50:+10%")
    assert text.returncode == 1
    assert "gate FAILED: p50:+10%" in text.stdout
    passed = _diff(runs, runs["first"], runs["slow"], "--fail-on", "p50:+1000%")
    assert passed.returncode == 0, passed.stdout


def test_diff_json_validates_against_the_published_diff_schema(runs: dict[str, Any]) -> None:
    cwd: Path = runs["cwd"]
    printed = run_cli(["schema", "diff", "-o", "diff.schema.json"], cwd)
    assert printed.returncode == 0, printed.stderr
    schema = json.loads((cwd / "diff.schema.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    gates = ("--fail-on", "p50:+10%", "--fail-on", "throughput:-90%")
    result = _diff(runs, runs["first"], runs["slow"], *gates, "--json")
    assert result.returncode == 1, result.stderr
    data = result.json()
    assert data["schema"] == "protobench.diff/1"
    assert [g["status"] for g in data["gates"]] == ["failed", "passed"]
    validator.validate(data)
    data["gates"][0]["status"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_a_different_profile_is_flagged_before_the_table(runs: dict[str, Any]) -> None:
    result = _diff(runs, runs["first"], runs["slow"])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    warning = lines.index("WARNING: the runs may not be comparable:")
    assert lines[warning + 1].startswith("  - other profile hash: base ")
    table = next(i for i, x in enumerate(lines) if x.startswith("throughput "))
    assert warning < table


def test_several_runs_per_side(runs: dict[str, Any]) -> None:
    result = _diff(runs, runs["first"], runs["second"], "--", runs["slow"], "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert [r["id"] for r in data["new"]] == [Path(runs["slow"]).name.split(".")[0]]
    row = _row(data, "get", "p50")
    assert row["base"]["n"] == data["base"][0]["intervals"] + data["base"][1]["intervals"]


def test_exported_hlog_reads_back_with_the_snapshot_percentiles(runs: dict[str, Any]) -> None:
    cwd: Path = runs["cwd"]
    result = run_cli(["snapshots", "export", runs["slow"], "-o", "slow.hlog"], cwd)
    assert result.returncode == 0, result.stderr
    reader = HistogramLogReader(str(cwd / "slow.hlog"), new_histogram())
    merged: dict[str | None, HdrHistogram] = {}
    while (hist := reader.get_next_interval_histogram()) is not None:
        merged.setdefault(hist.get_tag(), new_histogram()).add(hist)
    shown = run_cli(["snapshots", "show", runs["slow"], "--json"], cwd)
    sustain = json.loads(shown.stdout)["report"]["phases"]["sustain"]
    assert summary(merged[None]) == sustain["total"]["latency_us"]
    assert summary(merged["get"]) == sustain["ops"]["get"]["latency_us"]
    csv_out = run_cli(["snapshots", "export", runs["slow"], "--format", "csv"], cwd)
    rows = list(csv.DictReader(io.StringIO(csv_out.stdout)))
    assert csv_out.stdout.startswith("phase,index,start_time,end_time,start_epoch,end_epoch,")
    assert sum(int(r["ok"]) for r in rows if r["op"] == "get") == sustain["ops"]["get"]["ok"]
