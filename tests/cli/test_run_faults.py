"""Whole runs under faults: a target that never answers, a hung worker, a killed controller.

A worker killed mid-run (SIGKILL, or by the watchdog when its plugin blocks its event
loop) leaves what it reported, and the other workers' figures, in the report and the
snapshot. Also: a secret serve option never reaches a command line. Every run and wait
is bounded.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from protobench.targets.launcher import embedded_target
from tests.support import blocking_plugin
from tests.support.cli import CliResult
from tests.support.http_server import http_target
from tests.support.processes import workers_of

pytestmark = pytest.mark.integration


@contextmanager
def _silent_target() -> Iterator[str]:
    """A loopback TCP server that accepts connections, reads, and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/"
    finally:
        done.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def _counters(report: dict[str, Any], phase: str) -> dict[str, int]:
    counters: dict[str, int] = report["phases"][phase]["total"]["counters"]
    return counters


def test_exchanges_pending_at_the_end_are_not_invisible(cli: Callable[..., CliResult]) -> None:
    with _silent_target() as url:
        args = ["http-get", "--target", url, "-c", "2", "-p", "1", "--warmup", "0s"]
        result = cli("run", *args, "--duration", "1s", "--timeout", "30s", "--json", "--quiet")
    report = result.json()
    sustain, drain = report["phases"]["sustain"]["total"], report["phases"]["drain"]["total"]
    assert sustain["ok"] == drain["ok"] == 0
    assert _counters(report, "sustain")["connects"] == 2
    assert _counters(report, "drain")["unfinished"] == 2  # still waiting at the very end


def test_an_exchange_older_than_the_timeout_is_a_timeout_in_its_phase(
    cli: Callable[..., CliResult],
) -> None:
    with _silent_target() as url:
        args = ["http-get", "--target", url, "-c", "2", "-p", "1", "--warmup", "0s"]
        result = cli("run", *args, "--duration", "2s", "--timeout", "500ms", "--json", "--quiet")
    sustain = result.json()["phases"]["sustain"]["total"]
    assert sustain["ok"] == 0
    assert sustain["errors_by_class"].get("timeout", 0) >= 2


def _run_until_sustain(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", "run", *args, "--ndjson", "--quiet"],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    for line in process.stdout:
        event = json.loads(line)
        if event["type"] == "interval" and event["phase"] == "sustain":
            return process
    raise AssertionError(f"the run ended before its sustain phase: {process.communicate()}")


def test_a_hung_worker_is_killed_and_the_run_goes_on_partial(tmp_path: Path) -> None:
    with http_target() as target:
        args = ["http-get", "--target", target.url, "-c", "4", "-p", "2", "--interval", "500ms"]
        process = _run_until_sustain([*args, "--warmup", "0s", "--duration", "5s"], tmp_path)
        workers = workers_of(process.pid)
        assert len(workers) == 2
        workers[0].send_signal(signal.SIGSTOP)
        stdout, stderr = process.communicate(timeout=60)
    report = json.loads(stdout.splitlines()[-1])
    assert process.returncode == 3, stderr
    assert report["partial"]
    failed = [w for w in report["workers"] if w["error"]]
    assert len(failed) == 1
    assert "stopped (SIGSTOP or a debugger); killed" in failed[0]["error"]
    assert report["phases"]["sustain"]["total"]["ok"] > 0
    assert not workers[0].is_running()


def _blocking_profile(directory: Path, url: str) -> Path:
    path = directory / "blocking.toml"
    path.write_text(
        f'name = "blocking"\nprotocol = "{blocking_plugin.NAME}"\ntarget = "{url}"\n'
        '[[group]]\nname = "get"\nop = "request"\ncount = 4\n'
    )
    return path


@pytest.mark.parametrize("killed_by", ["SIGKILL", "its loop blocked"])
def test_a_worker_killed_mid_run_leaves_its_intervals_and_the_others(
    tmp_path: Path, killed_by: str
) -> None:
    env = {**os.environ, **blocking_plugin.installed(tmp_path / "plugin", after=2.0)}
    with http_target() as target:
        profile = "http-get"
        if killed_by != "SIGKILL":
            profile = str(_blocking_profile(tmp_path, target.url))
        args = [profile, "--target", target.url, "-c", "4", "-p", "2", "--interval", "500ms"]
        args += ["--warmup", "0s", "--duration", "6s", "--ndjson", "--quiet"]
        process = subprocess.Popen(
            [sys.executable, "-m", "protobench", "run", *args],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert process.stdout is not None
        sustain = 0
        for line in process.stdout:
            event = json.loads(line)
            if event["type"] == "interval" and event["phase"] == "sustain":
                sustain += 1
                if sustain == 3 and killed_by == "SIGKILL":
                    workers_of(process.pid)[0].send_signal(signal.SIGKILL)
            if event["type"] == "report":
                report = event
                break
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 3, stderr
    assert (report["partial"], report["stop_reason"]) == (True, "worker-failed")
    failed = {w["worker"]: w["error"] for w in report["workers"] if w["error"]}
    assert len(failed) == 1
    (error,) = failed.values()
    if killed_by == "SIGKILL":
        assert error == "exited with code -9"
    else:
        assert "its event loop is blocked" in error
    snapshot = json.loads(gzip.decompress(Path(report["snapshot"]).read_bytes()))
    series = [r for r in snapshot["series"] if r["phase"] == "sustain"]
    both = [r for r in series if len(r["worker_lag_ms"]) == 2]
    after = [r for r in series if len(r["worker_lag_ms"]) == 1]
    assert len(both) >= 2  # the killed worker's intervals before it died stay
    assert after  # and the other worker's after it
    assert series.index(both[-1]) < series.index(after[0])
    kept = sum(r["ops"]["get"]["ok"] for r in snapshot["series"])
    assert kept == sum(phase["total"]["ok"] for phase in report["phases"].values())
    assert sum(r["ops"]["get"]["ok"] for r in both) > 0
    assert report["phases"]["sustain"]["total"]["ok"] > 0


def test_a_run_whose_sessions_cannot_open_stops_early_with_one_line(
    cli: Callable[..., CliResult],
) -> None:
    with socket.socket() as reserved:  # bound, never listening: every connect is refused
        reserved.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{reserved.getsockname()[1]}/"
        args = ["http-get", "--target", url, "-c", "4", "-p", "2", "--duration", "60s"]
        result = cli("run", *args, "--json", "--quiet", timeout=50)
    report = result.json()
    assert result.returncode == 3, result.stderr
    assert (report["partial"], report["stop_reason"]) == (True, "no-session")
    (why,) = [n["message"] for n in report["notices"] if n["kind"] == "sessions"]
    seconds = re.match(r"no session could open in (\d+) s \(4 sessions, ", why)
    assert seconds is not None, why
    assert 5 <= int(seconds[1]) < 15  # the first interval at or after 5 s, late if busy
    assert f"; first error: refused: {url}" in why
    assert why.endswith("stopped early")
    ended = max(phase["end_s"] for phase in report["phases"].values())
    assert ended < 15  # of the 62 s planned


def test_kill_9_of_the_controller_leaves_no_process(tmp_path: Path) -> None:
    args = ["http-get", "-c", "2", "-p", "2", "--warmup", "0s", "--duration", "60s"]
    process = _run_until_sustain(args, tmp_path)
    children = psutil.Process(process.pid).children(recursive=True)
    try:
        lines = [" ".join(child.cmdline()) for child in children]
        assert len(workers_of(process.pid)) == 2
        assert sum("protobench.targets.serve" in line for line in lines) == 1
        process.kill()
        process.communicate(timeout=30)
        _, alive = psutil.wait_procs(children, timeout=15)
        assert alive == []
    finally:
        for child in children:
            if child.is_running():
                child.kill()


@pytest.mark.anyio
async def test_a_serve_password_is_on_no_command_line(tmp_path: Path) -> None:
    secret = "pw-9d1c-never-in-ps"
    async with embedded_target("haystack", {"password": secret}, tmp_path / "t.log") as target:
        with anyio.fail_after(60):
            announcement = await target.ready()
        assert announcement.pid
        pids = [p.pid for p in psutil.Process(os.getpid()).children(recursive=True)]
        assert announcement.pid in pids
        for pid in pids:
            cmdline = await anyio.Path(f"/proc/{pid}/cmdline").read_bytes()
            assert secret.encode() not in cmdline


def test_a_plugin_exception_is_a_local_error_not_a_dead_worker(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    """Haystack over https with a CA file that does not exist: the plugin raises
    FileNotFoundError when it opens a session (the worker used to die of it)."""
    missing = tmp_path / "missing-ca.pem"
    result = cli(
        "run", "haystack-http", "--target", "https://127.0.0.1:1/api/", "--opt",
        f"ca_file={missing}", "-c", "5", "-p", "1", "--warmup", "0s", "--duration", "1s",
        "--json", "--quiet",
    )  # fmt: skip
    report = result.json()
    assert "Traceback" not in result.stderr
    assert all(worker["error"] is None for worker in report["workers"])
    sustain = report["phases"]["sustain"]["total"]
    assert sustain["errors_by_class"]["local"] >= 5
    assert sustain["error_codes"]["local:FileNotFoundError"] == sustain["errors_by_class"]["local"]
    assert sustain["counters"]["connect_failed"] >= 5
    assert sustain["counters"]["down_us"] > 0
    logs = list((tmp_path / report["workers"][0]["log"]).parent.glob("worker-*.log"))
    assert logs
    assert sum(log.read_text().count("Traceback") for log in logs) == 1  # once per type
