"""``run --profile-target`` against real servers: where each one spends sustain.

The embedded HTTP target (py-spy: its delay line, its ``burn_cpu``), bac-py's
BACnet/IP server (py-spy: its transaction state machine and objects),
mosquitto (perf), and a Go server with ``net/http/pprof`` (``--pprof``).
Every run is a few seconds of load against loopback. A target whose tool is
missing is one notice and the run goes on.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from protobench.engine.stacks import perf
from protobench.engine.stacks.model import function_shares
from protobench.snapshots.store import SnapshotStore
from tests.support.cli import CliResult, run_cli
from tests.support.mqtt import mosquitto
from tests.support.timing import S

GO = shutil.which("go")
GO_SERVER = Path(__file__).parents[1] / "support" / "peers" / "go_pprof"
pytestmark = pytest.mark.integration

RUN = ("-d", "4s", "--warmup", "1s", "--no-tui", "--json", "--snapshots-dir", "snaps")


def profiled(result: CliResult) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-2000:]
    report = result.json()
    assert "target_profile" in report, report["notices"]
    summary: dict[str, Any] = report["target_profile"]
    return summary


def totals(cwd: Path) -> dict[str, float]:
    """Each function's total share of the running samples in the latest snapshot's profile."""
    snapshot = SnapshotStore(cwd / "snaps").load("latest")
    assert snapshot.target_profile is not None
    return {f.function: f.total_share for f in function_shares(snapshot.target_profile.cpu)}


def test_the_http_targets_delay_line_is_among_its_top_functions(tmp_path: Path) -> None:
    result = run_cli(
        ["run", "http-get", "--serve-opt", "delay=1ms", "--profile-target", *RUN], tmp_path
    )
    summary = profiled(result)
    assert summary["tool"] == "py-spy"
    assert summary["rate"] == 100
    assert summary["samples"] >= 100  # 4 s at 100 Hz, whatever the host's load
    assert 0 < summary["idle_share"] < 1  # the loop waits for the delay, and works
    assert summary["overhead"]
    top = [f["function"] for f in summary["top"]]
    assert any(name.startswith("DelayLine.") for name in top), top
    assert totals(tmp_path)["DelayLine._fired"] > 0.2  # every delayed response goes through it
    show = run_cli(["snapshots", "show", "latest", "--snapshots-dir", "snaps"], tmp_path)
    assert "target profile: py-spy at 100 Hz" in show.stdout
    assert "DelayLine." in show.stdout


def test_a_target_made_to_burn_cpu_names_the_function_in_diff(tmp_path: Path) -> None:
    for burn in ("0s", "300us"):
        args = ["run", "http-get", "-c", "8", "-p", "1", "--serve-opt", f"burn={burn}"]
        profiled(run_cli([*args, "--profile-target", *RUN], tmp_path))
    result = run_cli(["diff", "latest~1", "latest", "--json", "--snapshots-dir", "snaps"], tmp_path)
    assert result.returncode in (0, 4), result.stderr
    changes = result.json()["profile"]
    grown = [c["function"] for c in changes[:3] if c["self_change"] > 0]
    assert "burn_cpu" in grown, changes[:5]
    burn = next(c for c in changes if c["function"] == "burn_cpu")
    assert burn["base_self"] == 0
    assert burn["new_self"] > 0.2
    text = run_cli(["diff", "latest~1", "latest", "--snapshots-dir", "snaps"], tmp_path).stdout
    assert "burn_cpu (protobench/targets/http.py)" in text
    assert "other target sampling" not in text  # both sides were sampled alike


def test_diff_warns_when_one_side_was_not_sampled(tmp_path: Path) -> None:
    args = ["run", "http-get", "-c", "4", "-p", "1", "-d", "2s", "--warmup", "0s", "--no-tui"]
    for extra in ((), ("--profile-target",)):
        done = run_cli([*args, "-q", "--snapshots-dir", "snaps", *extra], tmp_path)
        assert done.returncode == 0, done.stderr
    result = run_cli(["diff", "latest~1", "latest", "--json", "--snapshots-dir", "snaps"], tmp_path)
    warnings = result.json()["warnings"]
    assert any(
        w.startswith("other target sampling: base off, new py-spy at 100 Hz") for w in warnings
    )
    assert result.json()["profile"] is None


def test_bac_py_servers_own_functions_are_sampled(tmp_path: Path) -> None:
    pytest.importorskip("bac_py")
    result = run_cli(["run", "bacnet-ip", "--profile-target", *RUN], tmp_path)
    summary = profiled(result)
    assert any(m["module"].startswith("bac_py.") for m in summary["modules"][:3])
    shares = totals(tmp_path)
    seen = [name for name in shares if name.startswith(("ServerTSM.", "ObjectDatabase."))]
    assert seen, sorted(shares)[:40]


def test_mosquitto_is_sampled_with_perf(tmp_path: Path) -> None:
    why = perf.cannot_run()
    if why is not None:
        pytest.skip(why)
    with mosquitto(tmp_path / "broker") as broker:
        args = ["run", "mqtt-throughput", "-t", broker.url, "-c", "4", "-p", "1"]
        result = run_cli([*args, "--profile-target", *RUN], tmp_path)
    summary = profiled(result)
    assert summary["tool"] == "perf"
    assert summary["pid"] == broker.pid
    assert summary["idle_share"] == 0  # cpu-clock samples a running thread only
    modules = {m["module"] for m in summary["modules"]}
    assert modules & {"mosquitto", "libc.so.6", "kernel"}, modules


def test_a_missing_tool_is_one_notice_and_the_run_goes_on(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "nothing")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "protobench",
            "run",
            "http-get",
            "--profile-target",
            "--profiler",
            "perf",
            *RUN,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120 * S,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert "target_profile" not in report
    lines = [n["message"] for n in report["notices"] if n["kind"] == "profile"]
    assert lines == [f"cannot profile the target: perf is not installed ({perf.INSTALL})"]


@pytest.fixture
def go_server(tmp_path: Path) -> Any:
    if GO is None:
        pytest.skip("go is not installed")
    binary = tmp_path / "pprofdemo"
    subprocess.run(
        [GO, "build", "-o", str(binary), "."], cwd=GO_SERVER, check=True, timeout=300 * S
    )
    server = subprocess.Popen(
        [str(binary), "-burn", "200us"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        yield int(server.stdout.readline())
    finally:
        server.kill()
        server.wait(10 * S)


def test_a_go_servers_pprof_gives_its_cpu_heap_and_mutex_profiles(
    tmp_path: Path, go_server: int
) -> None:
    url = f"http://127.0.0.1:{go_server}"
    args = ["run", "http-get", "-t", f"{url}/", "-c", "8", "-p", "1"]
    pprof = ["--pprof", f"{url}/debug/pprof", "--pprof-extra", "heap", "--pprof-extra", "mutex"]
    summary = profiled(run_cli([*args, *pprof, *RUN], tmp_path))
    assert summary["tool"] == "pprof"
    assert summary["extra"] == ["heap", "mutex"]
    assert summary["top"][0]["function"] == "main.burnCPU"
    snapshot = SnapshotStore(tmp_path / "snaps").load("latest")
    assert snapshot.target_profile is not None
    assert snapshot.target_profile.extra["heap"].unit == "bytes"
    assert snapshot.target_profile.extra["mutex"].unit == "nanoseconds"


def test_the_pprof_export_reads_in_go_tool_pprof(tmp_path: Path) -> None:
    if GO is None:
        pytest.skip("go is not installed")
    profiled(
        run_cli(
            ["run", "http-get", "--serve-opt", "burn=200us", "--profile-target", *RUN], tmp_path
        )
    )
    export = ["snapshots", "export", "latest", "-o", "t.pb.gz", "--snapshots-dir", "snaps"]
    assert run_cli(export, tmp_path).returncode == 0
    assert gzip.decompress((tmp_path / "t.pb.gz").read_bytes())
    top = subprocess.run(
        [GO, "tool", "pprof", "-top", "-tagfocus", "state=running", "t.pb.gz"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120 * S,
        check=True,
    )
    assert "burn_cpu" in top.stdout
    collapsed = run_cli(
        ["snapshots", "export", "latest", "-f", "collapsed", "--snapshots-dir", "snaps"], tmp_path
    )
    assert any(line.endswith(tuple("0123456789")) for line in collapsed.stdout.splitlines())
    speedscope = run_cli(
        ["snapshots", "export", "latest", "-f", "speedscope", "--snapshots-dir", "snaps"], tmp_path
    ).json()
    assert [p["name"].rsplit(", ", 1)[1] for p in speedscope["profiles"]] == [
        "running)",
        "waiting)",
    ]
