"""The monitor in a real pseudo-terminal: a hostile server's or file's escape sequences never
reach it raw.

The monitor writes escape sequences of its own (colours, cursor moves), so the raw
bytes read from the pty are searched for the hostile ones (:data:`tests.hostile.FORBIDDEN`,
any C1 control), and the hostile words must be on the screen as text. Cases: a live run
against a Haystack server whose error grids carry them (overview, errors view, summary,
the logs screen with a log line carrying them), and the replay of a tampered snapshot
(its notices as toasts and in the notice log, its worker's log on the logs screen).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hostile import (
    EVERYTHING,
    assert_no_escapes,
    haystack_error_server,
    hostile_snapshot,
    shown,
)

LIMIT = 120.0


class Pty:
    """``python -m protobench ARGS`` on a 160x50 pseudo-terminal; every byte it writes kept."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "protobench", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.raw = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the other side is closed
                return
            if not data:
                return
            self.raw += data

    def press(self, keys: bytes, settle: float = 1.0) -> None:
        os.write(self.master, keys)
        time.sleep(settle)

    def wait_for(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + LIMIT
        while not ready():
            if time.monotonic() > deadline or self.process.poll() is not None:
                end = bytes(self.raw[-2000:])
                pytest.fail(f"{what} never happened; the output ends with {end!r}")
            time.sleep(0.2)

    def close(self) -> int:
        """Quit (``q``, again if asked), wait for the exit; its code."""
        deadline = time.monotonic() + LIMIT
        while self.process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.write(self.master, b"q")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=2.0)
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait(timeout=10)
        self._reader.join(10)
        os.close(self.master)
        return code


@contextlib.contextmanager
def on_pty(args: list[str], cwd: Path) -> Iterator[Pty]:
    terminal = Pty(args, cwd)
    try:
        yield terminal
    finally:
        if terminal.process.poll() is None:
            os.killpg(terminal.process.pid, signal.SIGKILL)
            terminal.process.wait(10)


PROFILE = """name = "hostile-haystack"
protocol = "haystack"
[options]
auth = false
[[group]]
name = "about"
op = "about"
count = 2
"""


@pytest.mark.timeout(300)
def test_a_live_run_against_a_hostile_server_shows_its_words_as_text(tmp_path: Path) -> None:
    profile = tmp_path / "hostile.toml"
    profile.write_text(PROFILE)
    store = tmp_path / ".protobench" / "snapshots"
    logs = tmp_path / ".protobench" / "logs"
    args = ["run", str(profile), "-p", "1", "--warmup", "0s", "--duration", "2s"]
    with haystack_error_server() as url, on_pty([*args, "--target", url], tmp_path) as terminal:
        terminal.wait_for(lambda: any(store.glob("*.json.gz")), "the snapshot")
        terminal.press(b"3")  # the errors view: the last message of each class
        for log in logs.glob("*/*.log"):  # a log line quoting the server, as a library may
            with log.open("a") as handle:
                handle.write(f"library said: {EVERYTHING}\n")
        terminal.press(b"l", settle=2.0)  # the logs screen
        terminal.press(b"\x1b")
        code = terminal.close()
    assert code == 1  # the run ended: every exchange failed (a built-in check)
    assert_no_escapes(bytes(terminal.raw), plain=False)
    assert shown(bytes(terminal.raw))
    assert b"library said" in terminal.raw


@pytest.mark.timeout(300)
def test_the_replay_of_a_tampered_snapshot_shows_its_words_as_text(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = "20250101-000000-hostile-0001"
    hostile_snapshot(store, run_id, f"host {EVERYTHING}", op="get")  # a replayable op name
    logs = store / "logs" / run_id
    logs.mkdir(parents=True)
    (logs / "worker-0.log").write_text(f"worker said: {EVERYTHING}\n")
    args = ["replay", "latest", "--speed", "8", "--snapshots-dir", str(store)]
    with on_pty(args, tmp_path) as terminal:
        terminal.wait_for(lambda: b"COMPLETED" in terminal.raw, "the summary")
        terminal.press(b"1")  # the overview: the notice log
        terminal.press(b"l", settle=2.0)
        terminal.press(b"\x1b")
        code = terminal.close()
    assert code == 0
    assert_no_escapes(bytes(terminal.raw), plain=False)
    assert shown(bytes(terminal.raw))
    assert b"worker said" in terminal.raw
