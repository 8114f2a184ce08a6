"""Whole BACnet/IP runs through the CLI: the three built-in profiles, and a device that stops.

Every run is a few seconds long and bounded by a subprocess timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, CliResult

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "3s", "--json", "--quiet")
OPS = {
    "bacnet-ip": {
        "read-property",
        "write-property",
        "read-property-multiple",
        "write-property-multiple",
        "object-list",
        "cov",
    },
    "bacnet-router": {
        "read-property",
        "write-property",
        "read-property-multiple",
        "write-property-multiple",
        "object-list",
        "route-check",
    },
    "bacnet-bbmd": {
        "read-property",
        "write-property",
        "read-property-multiple",
        "write-property-multiple",
        "object-list",
        "cov",
        "read-fdt",
        "read-bdt",
    },
}
LIMITS = {"bacnet-ip": 0.005, "bacnet-router": 0.01, "bacnet-bbmd": 0.005}


def total(report: dict[str, Any], op: str, key: str = "ok") -> int:
    """An op's count over every phase (periodic ops may fire only once in a short run)."""
    count = 0
    for phase in report["phases"].values():
        item = phase["ops"].get(op, {})
        count += (
            item.get(key, 0) if key in ("ok", "errors") else item.get("counters", {}).get(key, 0)
        )
    return count


@pytest.mark.parametrize("name", ["bacnet-ip", "bacnet-router", "bacnet-bbmd"])
def test_builtin_profile_runs_every_op_under_its_threshold(
    name: str, cli: Callable[..., CliResult]
) -> None:
    result = cli("run", name, *SHORT, timeout=180)
    assert result.returncode == 0, result.stderr
    report = result.json()
    sustain = report["phases"]["sustain"]
    assert set(sustain["ops"]) == OPS[name]
    for op in OPS[name]:
        assert total(report, op) >= 1, op
    assert sustain["ops"]["read-property"]["ok"] > 100
    # every request datagram is counted out (a read-property is at least 17 B: BVLC 4,
    # NPDU 2, APDU 4, object 5 and property 2)
    assert (
        sustain["ops"]["read-property"]["bytes_out"] >= 17 * sustain["ops"]["read-property"]["ok"]
    )
    assert sustain["total"]["error_rate"] < LIMITS[name]
    assert all(item["ok"] for item in report["thresholds"])
    if "cov" in OPS[name]:
        assert total(report, "cov", "notifications") >= 2
    assert report["target"].startswith("bacnet://127.0.0.1:")
    assert Path(report["snapshot"]).is_file()


FAULTS = """
name = "bacnet-faults"
protocol = "bacnet-ip"
thresholds = ["ok[unknown-property] >= 0"]  # this op never works, by design
[[group]]
op = "read-property"
count = 2
objects = ["analog-input:*"]
[[group]]
name = "unknown-property"
op = "read-property"
count = 1
every = "100ms"
objects = ["analog-input:1"]
property = "elevator-group"
"""


def test_unknown_property_and_a_device_that_stops_answering(tmp_path: Path) -> None:
    """Protocol errors keep their class:code; a device that stops gives timeouts, and the run
    still completes with a report and a snapshot."""
    profile = tmp_path / "faults.toml"
    profile.write_text(FAULTS)
    serve = [sys.executable, "-m", "protobench", "serve", "bacnet-ip", "--port", "0", "--announce"]
    with subprocess.Popen(
        serve, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as server:
        try:
            assert server.stdout is not None
            url = json.loads(server.stdout.readline())["url"]
            run = [sys.executable, "-m", "protobench", "run", str(profile), "--target", url]
            run += ["--warmup", "1s", "--duration", "4s", "--timeout", "500ms", "--json"]
            env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO / "src")}
            with subprocess.Popen(
                run,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            ) as client:
                assert client.stderr is not None
                for line in client.stderr:
                    if line.startswith("phase sustain"):
                        break
                time.sleep(1.5)
                server.send_signal(signal.SIGSTOP)
                stdout, stderr = client.communicate(timeout=120)
        finally:
            server.send_signal(signal.SIGCONT)
            server.terminate()
            server.wait(timeout=10)
    assert client.returncode == 0, stderr  # the failing op is allowed: the run completes normally
    report = json.loads(stdout)
    assert report["stop_reason"] == "completed"
    assert not report["partial"]
    sustain = report["phases"]["sustain"]
    unknown = sustain["ops"]["unknown-property"]["error_codes"]
    assert unknown.get("protocol:property:unknown-property", 0) >= 5
    reads = sustain["ops"]["read-property"]
    assert reads["ok"] > 10
    assert reads["errors_by_class"].get("timeout", 0) >= 1
    assert set(sustain["total"]["errors_by_class"]) <= {"timeout", "protocol"}
    assert Path(report["snapshot"]).is_file()
