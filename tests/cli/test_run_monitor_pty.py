"""End to end: ``protobench run http-get`` in a real terminal (tmux), ``q``, the snapshot saved."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from protobench.snapshots.store import SnapshotStore
from tests.support.timing import S

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(
        importlib.util.find_spec("protobench.protocols.http.plugin") is None,
        reason="the http plugin (protobench.protocols.http.plugin) is not in the tree yet",
    ),
]
LIMIT = 100 * S
RATE_ROW = re.compile(r"│ get\s+[\d.,]+\s+[\d.]+(µs|ms)")
CPU_METER = re.compile(r"\d+ [█░]+\s+\d+\.\d%")


def tmux(*args: str) -> str:
    done = subprocess.run(["tmux", *args], capture_output=True, text=True, check=False)
    return done.stdout


def wait_screen(session: str, ready: Callable[[str], bool], what: str) -> str:
    """Poll the pane until ``ready(screen)``; fail with the last screen after LIMIT seconds."""
    deadline = time.monotonic() + LIMIT
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if ready(screen):
            return screen
        time.sleep(0.25)
    pytest.fail(f"{what} never appeared; the last screen was:\n{screen}")


@pytest.mark.timeout(300)
def test_run_under_a_terminal_shows_metrics_and_q_saves_the_snapshot(tmp_path: Path) -> None:
    session = f"protobench-e2e-{os.getpid()}"
    exit_file = tmp_path / "exit-code"
    command = (
        f"{shlex.quote(sys.executable)} -m protobench run http-get --duration 4s --warmup 1s "
        f"--processes 2; echo $? > {shlex.quote(str(exit_file))}"
    )
    # A tmux server started by this very command may give its window the default
    # 80x24 whatever -x/-y say; fix the size before the monitor starts.
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(tmp_path))
    tmux("set-option", "-t", session, "window-size", "manual")
    tmux("resize-window", "-t", session, "-x", "120", "-y", "40")
    tmux("send-keys", "-t", session, command, "Enter")
    try:
        screen = wait_screen(
            session,
            lambda s: bool(RATE_ROW.search(s) and CPU_METER.search(s)) and "p99" in s,
            "throughput, p99 and the CPU meter",
        )
        assert "throughput · ops/s" in screen
        assert "workers (% of one core)" in screen
        tmux("send-keys", "-t", session, "q")
        screen = wait_screen(
            session,
            lambda s: "Stop the run now" in s or ".protobench/snapshots/" in s,
            "the stop question (or the summary)",
        )
        if "Stop the run now" in screen:
            tmux("send-keys", "-t", session, "y")
        screen = wait_screen(session, lambda s: ".protobench/snapshots/" in s, "the summary")
        assert "COMPLETED" in screen or "PARTIAL RUN: stopped" in screen
        tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + LIMIT
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert exit_file.read_text().strip() in ("0", "3")
    finally:
        tmux("kill-session", "-t", session)
    store = SnapshotStore(tmp_path / ".protobench" / "snapshots")
    assert len(store.paths()) == 1
    snapshot = store.load("latest")
    assert snapshot.report.stop_reason in ("completed", "stopped")
    assert snapshot.series


@pytest.mark.timeout(300)
def test_closing_the_terminal_saves_a_partial_snapshot_and_stops_every_child(
    tmp_path: Path,
) -> None:
    session = f"protobench-hup-{os.getpid()}"
    command = f"{shlex.quote(sys.executable)} -m protobench run http-get --duration 60s -p 1"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(tmp_path))
    tmux("set-option", "-t", session, "window-size", "manual")
    tmux("resize-window", "-t", session, "-x", "120", "-y", "40")
    tmux("send-keys", "-t", session, command, "Enter")
    try:
        wait_screen(session, lambda s: bool(RATE_ROW.search(s)), "the throughput of get")
        runs = [
            p
            for p in psutil.process_iter(["cmdline", "cwd"])
            if p.info["cwd"] == str(tmp_path) and "run" in (p.info["cmdline"] or [])
        ]
        assert len(runs) == 1
        family = [runs[0], *runs[0].children(recursive=True)]
    finally:
        tmux("kill-session", "-t", session)  # the terminal closes: SIGHUP
    _, alive = psutil.wait_procs(family, timeout=LIMIT)
    assert alive == [], "a process outlived the closed terminal"
    store = SnapshotStore(tmp_path / ".protobench" / "snapshots")
    snapshot = store.load("latest")
    assert snapshot.report.partial
    assert snapshot.report.stop_reason == "interrupted"
