"""Whole ``protobench run`` of the bacnet-sc profile: TLS, zero errors, a hub killed mid-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.targets import served

pytestmark = pytest.mark.integration


def _run(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "protobench", "run", "bacnet-sc", "--quiet", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_bacnet_sc_profile_with_tls_runs_clean(tmp_path: Path) -> None:
    process = _run(tmp_path, "--json", "--warmup", "1s", "--duration", "3s", "-p", "1")
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["target"].startswith("wss://127.0.0.1:")
    ops = report["phases"]["sustain"]["ops"]
    assert ops["unicast"]["ok"] > 100
    assert ops["broadcast"]["ok"] >= 8
    # an echo is the NPDU sent behind the echo node's prefix: out is less than in, not 0
    assert 0 < ops["unicast"]["bytes_out"] < ops["unicast"]["bytes_in"]
    assert ops["broadcast"]["bytes_out"] > 0
    assert report["phases"]["sustain"]["total"]["errors"] == 0
    assert report["thresholds"] == [{"expr": "error_rate <= 0%", "value": 0.0, "ok": True}]


def test_hub_killed_mid_run_gives_counted_errors_and_a_snapshot(tmp_path: Path) -> None:
    with served("bacnet-sc") as hub:
        args = ("--target", hub.url, "--ndjson", "--interval", "500ms", "-p", "1")
        process = _run(tmp_path, *args, "--warmup", "1s", "--duration", "4s")
        assert process.stdout is not None
        for line in process.stdout:
            event = json.loads(line)
            if event["type"] == "interval" and event["phase"] == "sustain":
                break
        hub.kill()
        stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    report = json.loads(stdout.splitlines()[-1])
    total = report["phases"]["sustain"]["total"]
    assert total["ok"] > 0
    assert total["errors"] > 0
    assert set(total["errors_by_class"]) <= {"closed", "refused", "connect", "timeout"}
    assert {"closed", "refused"} & set(total["errors_by_class"]), total["errors_by_class"]
    assert total["counters"]["reconnects"] >= 1
    assert report["thresholds"][0]["ok"] is False
    assert not report["partial"]
    assert Path(report["snapshot"]).is_file()
