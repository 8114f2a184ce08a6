"""End to end: ``protobench run http-get`` in a real terminal (tmux), ``q``, the snapshot saved;
the summary left in the terminal's scrollback once the monitor (or a replay) has closed."""

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

from protobench.engine.report_model import to_plain
from protobench.snapshots.store import SnapshotStore
from tests.support.scripted_run import Script, scripted_snapshot
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


SUMMARY_HEADER = re.compile(r"op\s+ok\s+err\s+err%\s+ops/s\s+p50\s+p90")
"""The header of the headless summary's table (``cli.render.summary_table``)."""


def open_terminal(session: str, cwd: Path, columns: int, rows: int) -> None:
    # A tmux server started by this very command may give its window the default
    # 80x24 whatever -x/-y say; fix the size before the monitor starts.
    tmux("new-session", "-d", "-s", session, "-x", str(columns), "-y", str(rows), "-c", str(cwd))
    tmux("set-option", "-t", session, "window-size", "manual")
    tmux("resize-window", "-t", session, "-x", str(columns), "-y", str(rows))


def scrollback(session: str) -> str:
    """The pane's whole history and screen, wrapped lines joined."""
    return tmux("capture-pane", "-p", "-J", "-S", "-", "-t", session)


def wait_for_file(path: Path) -> str:
    """The stripped text of ``path`` once it has some (a shell's ``>`` creates it empty)."""
    deadline = time.monotonic() + LIMIT
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return path.read_text().strip()


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
        f"{shlex.quote(sys.executable)} -m protobench run http-get --duration 30s --warmup 1s "
        f"--processes 2; echo $? > {shlex.quote(str(exit_file))}"
    )
    open_terminal(session, tmp_path, 120, 40)
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
        assert wait_for_file(exit_file) in ("0", "3")
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
    open_terminal(session, tmp_path, 120, 40)
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


@pytest.mark.timeout(300)
def test_at_80x24_the_run_shows_and_after_q_its_summary_stays_in_the_scrollback(
    tmp_path: Path,
) -> None:
    """Issue 30: the compact layout in a real 80×24 terminal (throughput, p50/p99 of get),
    and once the run ended and ``q`` closed the monitor, the headless summary is what the
    terminal keeps: the table, the threshold, the snapshot's path."""
    session = f"protobench-80x24-{os.getpid()}"
    exit_file = tmp_path / "exit-code"
    command = (
        f"{shlex.quote(sys.executable)} -m protobench run http-get --duration 3s --warmup 1s "
        f"--processes 1; echo $? > {shlex.quote(str(exit_file))}"
    )
    open_terminal(session, tmp_path, 80, 24)
    tmux("send-keys", "-t", session, command, "Enter")
    try:
        screen = wait_screen(
            session,
            lambda s: (
                "throughput · ops/s" in s and bool(re.search(r"get\s+[\d.,]+\s+[\d.]+(µs|ms)", s))
            ),
            "the throughput chart and the latency of get",
        )
        assert "p99" in screen
        assert " Help" in screen.splitlines()[-1]  # the key bar, whole at 80 columns
        wait_screen(session, lambda s: "COMPLETED · exit code 0" in s, "the summary view")
        tmux("send-keys", "-t", session, "q")
        assert wait_for_file(exit_file) == "0"
        history = scrollback(session)
    finally:
        tmux("kill-session", "-t", session)
    assert SUMMARY_HEADER.search(history), history
    assert re.search(r"^TOTAL\s+\d+\s+0\s+0\.00%", history, re.MULTILINE), history
    assert "threshold PASS: error_rate < 0.5%" in history
    [snapshot] = SnapshotStore(tmp_path / ".protobench" / "snapshots").paths()
    assert f"snapshot {snapshot}" in history


@pytest.mark.timeout(120)
def test_a_replay_leaves_its_summary_in_the_scrollback_and_quiet_leaves_none(
    tmp_path: Path,
) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    snapshot = scripted_snapshot(Script())
    path = store.write(snapshot.id, to_plain(snapshot))
    session = f"protobench-replay-{os.getpid()}"
    replay = f"{shlex.quote(sys.executable)} -m protobench replay latest"
    replay += f" --snapshots-dir {shlex.quote(str(store.directory))}"
    done = tmp_path / "done"
    open_terminal(session, tmp_path, 80, 24)
    try:
        for quiet in ("", " --quiet"):
            tmux("send-keys", "-t", session, "clear; tmux clear-history", "Enter")
            tmux("send-keys", "-t", session, f"{replay}{quiet}; echo $? > {done}", "Enter")
            wait_screen(session, lambda s: "REPLAY ×1" in s, "the replay")
            tmux("send-keys", "-t", session, "q")
            assert wait_for_file(done) == "0"
            done.unlink()
            history = scrollback(session)
            if quiet:
                assert not SUMMARY_HEADER.search(history)
            else:
                assert SUMMARY_HEADER.search(history), history
                assert re.search(r"^get\s+\d+", history, re.MULTILINE)
                assert "profile scripted" in history
    finally:
        tmux("kill-session", "-t", session)
    assert path.exists()
