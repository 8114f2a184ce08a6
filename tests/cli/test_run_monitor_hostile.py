"""The monitor in a real pseudo-terminal: a hostile server's or file's escape sequences never
reach it raw.

The monitor writes escape sequences of its own (colours, cursor moves), so the raw
bytes read from the pty are searched for the hostile ones (:data:`tests.support.hostile.FORBIDDEN`,
any C1 control), and the hostile words must be on the screen as text. Cases: a live run
against a Haystack server whose error grids carry them (overview, errors view, summary,
the logs screen with a log line carrying them), and the replay of a tampered snapshot
(its notices as toasts and in the notice log, its worker's log on the logs screen).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cli.test_run_monitor_signals import Terminal, terminal, wait_until
from tests.support.hostile import (
    EVERYTHING,
    assert_no_escapes,
    haystack_error_server,
    hostile_snapshot,
    shown,
)
from tests.support.timing import S

pytestmark = pytest.mark.integration

PROFILE = """name = "hostile-haystack"
protocol = "haystack"
[options]
auth = false
[[group]]
name = "about"
op = "about"
count = 2
"""


def _press(term: Terminal, keys: bytes, settle: float = 1.0) -> None:
    """Type ``keys`` and give the monitor ``settle`` seconds (scaled) to draw what they show."""
    term.type(keys)
    time.sleep(settle * S)


@pytest.mark.timeout(300)
def test_a_live_run_against_a_hostile_server_shows_its_words_as_text(tmp_path: Path) -> None:
    profile = tmp_path / "hostile.toml"
    profile.write_text(PROFILE)
    store = tmp_path / ".protobench" / "snapshots"
    logs = tmp_path / ".protobench" / "logs"
    args = ["run", str(profile), "-p", "1", "--warmup", "0s", "--duration", "2s"]
    with haystack_error_server() as url, terminal([*args, "--target", url], tmp_path) as term:
        wait_until(lambda: any(store.glob("*.json.gz")), "the snapshot", term)
        _press(term, b"3")  # the errors view: the last message of each class
        for log in logs.glob("*/*.log"):  # a log line quoting the server, as a library may
            with log.open("a") as handle:
                handle.write(f"library said: {EVERYTHING}\n")
        _press(term, b"l", settle=2.0)  # the logs screen
        _press(term, b"\x1b")
        code = term.exit_code(nudge=lambda: term.type(b"q"))
    raw = bytes(term.output)
    assert code == 1  # the run ended: every exchange failed (a built-in check)
    assert_no_escapes(raw, plain=False)
    assert shown(raw)
    assert b"library said" in raw


@pytest.mark.timeout(300)
def test_the_replay_of_a_tampered_snapshot_shows_its_words_as_text(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = "20250101-000000-hostile-0001"
    hostile_snapshot(store, run_id, f"host {EVERYTHING}", op="get")  # a replayable op name
    logs = store / "logs" / run_id
    logs.mkdir(parents=True)
    (logs / "worker-0.log").write_text(f"worker said: {EVERYTHING}\n")
    args = ["replay", "latest", "--speed", "8", "--snapshots-dir", str(store)]
    with terminal(args, tmp_path) as term:
        wait_until(lambda: b"COMPLETED" in term.output, "the summary", term)
        _press(term, b"1")  # the overview: the notice log
        _press(term, b"l", settle=2.0)
        _press(term, b"\x1b")
        code = term.exit_code(nudge=lambda: term.type(b"q"))
    raw = bytes(term.output)
    assert code == 0
    assert_no_escapes(raw, plain=False)
    assert shown(raw)
    assert b"worker said" in raw
