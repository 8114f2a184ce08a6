"""End to end in a real pseudo-terminal: every way of ending a monitored run early exits 3.

``protobench run http-get`` opens the monitor on a pty of its own; it is ended by
SIGINT, SIGTERM or SIGHUP sent to the CLI's pid, or by the Ctrl-C key or ``q``
typed on the terminal. Each test asserts the exit code, the saved snapshot's
``partial``/``stop_reason`` and that no child (fork server, worker, embedded
target) outlives the CLI. A run left to complete exits as its report says, and
a replay closed by SIGINT or SIGTERM exits 0 with the terminal restored.
Every wait is bounded; the process group is killed if a test fails midway.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from protobench.engine.report import exit_code_for
from protobench.engine.report_model import to_plain
from protobench.snapshots.store import SnapshotStore
from tests.support.scripted_run import scripted_snapshot
from tests.support.timing import S

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("protobench.protocols.http.plugin") is None,
        reason="the http plugin (protobench.protocols.http.plugin) is not in the tree",
    ),
]
LIMIT = 60 * S
"""Seconds any one wait may take before the test fails."""
LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049l"
"""What Textual writes last when it closes: the terminal is given back."""


class Terminal:
    """``protobench ARGS`` on a pseudo-terminal of its own: its output read, keys typed."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.master = master
        self.process = subprocess.Popen(
            [sys.executable, "-m", "protobench", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env={**os.environ, "TERM": "xterm-256color"},
            start_new_session=True,
        )
        os.close(slave)
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the child's side of the pty is closed
                return
            if not data:
                return
            self.output.extend(data)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def children(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def exit_code(self, nudge: Callable[[], None] | None = None) -> int:
        """Wait for the CLI to exit (calling ``nudge`` each second meanwhile); its code."""
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return self.process.wait(1.0)
            if nudge is not None:
                nudge()
        pytest.fail(f"protobench did not exit; its last output:\n{self.tail()}")

    def tail(self) -> str:
        return bytes(self.output[-2000:]).decode(errors="replace")

    def close(self) -> None:
        """Kill what is left (a failed test), read the output to its end."""
        if self.master < 0:
            return
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(LIMIT)
        self._reader.join(LIMIT)
        os.close(self.master)
        self.master = -1


@contextlib.contextmanager
def terminal(args: list[str], cwd: Path) -> Iterator[Terminal]:
    term = Terminal(args, cwd)
    try:
        yield term
    finally:
        term.close()


def wait_until(ready: Callable[[], bool], what: str, term: Terminal) -> None:
    deadline = time.monotonic() + LIMIT
    while not ready():
        if time.monotonic() > deadline or term.process.poll() is not None:
            pytest.fail(f"{what} never happened; the last output:\n{term.tail()}")
        time.sleep(0.2)


def loaded_run(
    tmp_path: Path, duration: str = "60s"
) -> contextlib.AbstractContextManager[Terminal]:
    """A monitored http-get run with one worker, in ``tmp_path``."""
    args = ["run", "http-get", "--duration", duration, "--warmup", "1s", "-p", "1"]
    return terminal(args, tmp_path)


def has_forkserver(term: Terminal) -> bool:
    """The run has started: its fork server is up."""
    return any("protobench.engine.forkserver" in " ".join(p.cmdline()) for p in term.children())


def under_load(term: Terminal) -> list[psutil.Process]:
    """Wait for the monitor's first figures with the fork server and its worker up;
    the CLI's descendants then."""

    def running() -> bool:
        return b"p99" in term.output and has_forkserver(term) and len(term.children()) >= 3

    wait_until(running, "the monitor with its fork server and worker", term)
    time.sleep(1 * S)  # an interval of load on screen
    return term.children()


def saved(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / ".protobench" / "snapshots")


def assert_ended_early(tmp_path: Path, family: list[psutil.Process], stop_reason: str) -> None:
    _, alive = psutil.wait_procs(family, timeout=LIMIT)
    assert alive == [], f"processes outlived the run: {alive}"
    report = saved(tmp_path).load("latest").report
    assert report.partial is True
    assert report.stop_reason == stop_reason


@pytest.mark.timeout(200)
@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: signal.Signals(s).name
)
def test_a_signal_from_outside_stops_the_run_saves_it_and_exits_3(
    tmp_path: Path, signum: signal.Signals
) -> None:
    with loaded_run(tmp_path) as term:
        family = under_load(term)
        os.kill(term.process.pid, signum)
        code = term.exit_code()  # the monitor closes by itself: no key typed
    assert code == 3
    assert_ended_early(tmp_path, family, "interrupted")


@pytest.mark.timeout(200)
def test_a_sigint_while_the_monitor_loads_is_the_same(tmp_path: Path) -> None:
    """The run starts before Textual is loaded: a SIGINT then was a KeyboardInterrupt (130)."""
    with loaded_run(tmp_path) as term:
        wait_until(lambda: has_forkserver(term), "the fork server", term)
        family = term.children()
        os.kill(term.process.pid, signal.SIGINT)
        code = term.exit_code()
    assert code == 3
    assert_ended_early(tmp_path, family, "interrupted")


@pytest.mark.timeout(200)
def test_the_ctrl_c_key_stops_the_run_and_q_then_exits_3(tmp_path: Path) -> None:
    with loaded_run(tmp_path) as term:
        family = under_load(term)
        term.type(b"\x03")  # a key in the monitor (Textual turns ISIG off), not a signal
        wait_until(lambda: bool(saved(tmp_path).paths()), "the snapshot", term)
        code = term.exit_code(nudge=lambda: term.type(b"q"))  # the summary stays until q
    assert code == 3
    assert_ended_early(tmp_path, family, "interrupted")


@pytest.mark.timeout(200)
def test_q_asks_stops_the_run_and_q_then_exits_3(tmp_path: Path) -> None:
    with loaded_run(tmp_path) as term:
        family = under_load(term)
        term.type(b"q")

        def answered_yes() -> bool:
            term.type(b"y")  # the question: yes (a y before it shows does nothing)
            return bool(saved(tmp_path).paths())

        wait_until(answered_yes, "the snapshot after q, y", term)
        code = term.exit_code(nudge=lambda: term.type(b"q"))
    assert code == 3
    assert_ended_early(tmp_path, family, "stopped")


@pytest.mark.timeout(200)
def test_a_completed_run_exits_as_its_report_says(tmp_path: Path) -> None:
    with loaded_run(tmp_path, duration="6s") as term:  # outlives the wait for its figures
        family = under_load(term)
        wait_until(lambda: bool(saved(tmp_path).paths()), "the snapshot", term)
        code = term.exit_code(nudge=lambda: term.type(b"q"))
    _, alive = psutil.wait_procs(family, timeout=LIMIT)
    assert alive == []
    snapshot = saved(tmp_path).load("latest")
    assert snapshot.report.partial is False
    assert snapshot.report.stop_reason == "completed"
    assert code == exit_code_for(snapshot.report)
    assert code in (0, 1)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name
)
def test_a_replay_closes_on_a_signal_with_exit_0_and_the_terminal_restored(
    tmp_path: Path, signum: signal.Signals
) -> None:
    snapshot = scripted_snapshot()
    path = saved(tmp_path).write(snapshot.id, to_plain(snapshot))
    with terminal(["replay", str(path), "--speed", "0.5"], tmp_path) as term:
        wait_until(lambda: b"p99" in term.output, "the replay on screen", term)
        os.kill(term.process.pid, signum)
        code = term.exit_code()
        term.close()  # the whole output read
    assert code == 0
    assert LEAVE_ALTERNATE_SCREEN in term.output


@pytest.mark.timeout(120)
def test_a_replay_of_a_snapshot_that_fails_its_check_closes_with_one_line_and_exit_2(
    tmp_path: Path,
) -> None:
    """The check (pydantic) runs after the replay's first frame: a snapshot whose JSON reads
    but whose report does not still ends in one line naming the file, exit code 2."""
    snapshot = scripted_snapshot()
    data = to_plain(snapshot)
    data["report"]["phases"]["sustain"]["total"]["ok"] = "many"
    path = saved(tmp_path).write(snapshot.id, data)
    with terminal(["replay", str(path)], tmp_path) as term:
        code = term.exit_code()
        term.close()
    assert code == 2
    assert LEAVE_ALTERNATE_SCREEN in term.output
    after = bytes(term.output).split(LEAVE_ALTERNATE_SCREEN)[-1].decode(errors="replace")
    text = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", after)
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, after
    assert str(path) in lines[0]
    assert "not a valid snapshot: report.phases.sustain.total.ok" in lines[0]
