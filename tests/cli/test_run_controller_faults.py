"""Faults at the controller: a target that never answers, a store that cannot be written,
a closed terminal (SIGHUP), Ctrl-C, SIGTERM, an NDJSON consumer that stops reading. Real
runs over loopback, each bounded by a short sustain and a subprocess timeout."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.cli import CliResult
from tests.support.http_server import http_target
from tests.support.processes import FORKSERVER, workers_of
from tests.support.timing import S

pytestmark = pytest.mark.integration

QUICK = ("-c", "2", "-p", "1", "--warmup", "0s", "--duration", "1s", "--interval", "250ms")
F_SETPIPE_SZ = 1031


@contextlib.contextmanager
def silent_listener() -> Iterator[str]:
    """A TCP port on loopback that completes handshakes (the backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"


def test_a_target_that_accepts_and_never_answers_exits_3_with_the_reason(
    cli: Callable[..., CliResult],
) -> None:
    with silent_listener() as url:
        result = cli("run", "http-get", "--target", url, *QUICK, "--timeout", "300ms", "--json")
    assert result.returncode == 3, result.stderr
    report = result.json()
    assert report["phases"]["sustain"]["total"]["ok"] == 0
    assert not report["partial"]
    assert "completed no exchange" in report["verdicts"]["incomplete_reason"]


def _check_fallback(result: CliResult, store: Path) -> dict[str, Any]:
    """The report is printed in full, the failure is one line, the snapshot is elsewhere."""
    assert "Traceback" not in result.stderr
    report: dict[str, Any] = result.json()
    assert report["phases"]["sustain"]["total"]["ok"] > 0
    lines = [line for line in result.stderr.splitlines() if "cannot save the snapshot" in line]
    assert len(lines) == 1, result.stderr
    assert str(store) in lines[0]
    saved = Path(report["snapshot"])
    assert saved.is_file()
    assert str(saved) in lines[0]
    assert not saved.is_relative_to(store)
    saved.unlink()
    saved.parent.rmdir()
    assert result.returncode == 5, result.stderr
    return report


def test_a_file_where_the_snapshot_directory_should_be_loses_nothing(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    store = tmp_path / "snaps"
    store.write_text("not a directory")
    with http_target() as target:
        result = cli(
            "run", "http-get", "--target", target.url, *QUICK, "--json",
            "--snapshots-dir", str(store),
        )  # fmt: skip
    report = _check_fallback(result, store)
    error = report["snapshot_error"]
    assert "File exists" in error or "Not a directory" in error


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A small tmpfs mounted at ``path`` (skips the test where mounting is not allowed)."""
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_read_only_store_prints_the_report_and_saves_elsewhere(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    with tmpfs(tmp_path / "ro", "ro,size=1m") as mount, http_target() as target:
        store = mount / "snaps"
        result = cli(
            "run", "http-get", "--target", target.url, *QUICK, "--json",
            "--snapshots-dir", str(store),
        )  # fmt: skip
    report = _check_fallback(result, store)
    assert "Read-only file system" in report["snapshot_error"]
    (logs,) = [n["message"] for n in report["notices"] if n["kind"] == "logs"]
    fallback = Path(logs.rpartition("logs go to ")[2])  # the logs went elsewhere too
    assert (fallback / "worker-0.log").is_file()
    shutil.rmtree(fallback)


def test_a_full_disk_prints_the_report_and_saves_elsewhere(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    with tmpfs(tmp_path / "full", "size=64k") as mount, http_target() as target:
        (mount / "snaps").mkdir()
        with contextlib.suppress(OSError), (mount / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        result = cli(
            "run", "http-get", "--target", target.url, *QUICK, "--json",
            "--snapshots-dir", str(mount / "snaps"),
        )  # fmt: skip
    report = _check_fallback(result, mount / "snaps")
    assert "No space left on device" in report["snapshot_error"]


def _started(process: subprocess.Popen[str]) -> None:
    """Wait for the progress line that says the run started."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("started:"):
            return
    raise AssertionError(f"the run did not start: {process.communicate()}")


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_a_partial_snapshot_and_stops_every_process(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """A closed terminal (SIGHUP), Ctrl-C (SIGINT) or a kill (SIGTERM): the run stops, saves,
    and leaves no process: not the embedded target, the fork server or a worker."""
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", "run", "http-get", *QUICK[:4],
         "--duration", "60s", "--json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _started(process)
    children = psutil.Process(process.pid).children(recursive=True)
    assert len(workers_of(process.pid)) == 1
    assert sum(FORKSERVER in " ".join(c.cmdline()) and c.ppid() == process.pid for c in children)
    process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 3, stderr
    report = json.loads(stdout)
    assert report["partial"]
    assert report["stop_reason"] == "interrupted"
    assert Path(report["snapshot"]).is_file()
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], "the embedded target, the fork server or a worker outlived the run"


def test_an_ndjson_consumer_that_stops_reading_does_not_stall_the_run(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    with http_target() as target:
        process = subprocess.Popen(
            [sys.executable, "-m", "protobench", "run", "http-get", "--target", target.url,
             *QUICK[:6], "--duration", "4s", "--interval", "50ms", "--ndjson", "--quiet"],
            cwd=tmp_path, stdout=write_end, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        os.close(write_end)
        store = tmp_path / ".protobench" / "snapshots"
        deadline = time.monotonic() + 90 * S
        while not list(store.glob("*.json.gz")) and time.monotonic() < deadline:
            if process.poll() not in (None, 0):  # bad input: no use waiting
                break
            time.sleep(0.2)
        # the run ended and saved its snapshot while nobody read the stream
        assert list(store.glob("*.json.gz")), "the run stalled on its unread NDJSON stream"
        with os.fdopen(read_end) as reader:
            lines = reader.read().splitlines()
        process.wait(timeout=60)
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    events = [json.loads(line) for line in lines]
    assert events[-1]["type"] == "report"
    assert events[-1]["phases"]["sustain"]["total"]["ok"] > 0
    dropped = [e for e in events if e["type"] == "notice" and e["kind"] == "ndjson"]
    assert len(dropped) == 1
    assert "left out" in dropped[0]["message"]


def test_no_session_could_open_exits_3_and_the_url_password_stays_out_of_every_stream(
    cli: Callable[..., CliResult],
) -> None:
    with silent_listener() as url:
        secret_url = url.replace("http://", "ws://u:hunter2@")
        result = cli("run", "ws-echo", "--target", secret_url, *QUICK, "--timeout", "300ms",
                     "--ndjson")  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "hunter2" not in result.stdout
    assert "hunter2" not in result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "started"
    assert "<secret>" in events[0]["target"]
    report = events[-1]
    assert "no session could open (2 failed)" in report["verdicts"]["incomplete_reason"]
