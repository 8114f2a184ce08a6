"""A server or a snapshot file cannot write to the user's terminal.

Real hostile servers on loopback (:mod:`tests.support.hostile`) answer with error texts
carrying OSC 0 (window title), OSC 8 (hyperlink, ended by ``ESC \\``), OSC 52
(clipboard), CSI (clear screen), their 8-bit C1 forms, DEL and Rich markup;
``run --no-tui`` against each must put none of it raw on stdout or stderr (the
summary and the progress line), only made visible. A tampered snapshot with the
same strings goes through ``snapshots show``, ``snapshots list``, ``diff`` and
``replay`` (stdout not a terminal: its summary). JSON keeps the exact strings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.support.hostile import (
    EVERYTHING,
    OSC_TITLE,
    assert_no_escapes,
    bacnet_error_server,
    haystack_error_server,
    hostile_snapshot,
    http_reason_server,
    mqtt_disconnect_server,
    shown,
    ws_close_server,
)
from tests.support.timing import S

pytestmark = pytest.mark.integration

QUICK = ("--no-tui", "-p", "1", "--warmup", "0s", "--duration", "1s", "--interval", "250ms")

PROFILES = {
    "http": 'protocol = "http"\n[[group]]\nname = "get"\nop = "request"\ncount = 2\n',
    "haystack-login": (
        'protocol = "haystack"\n[options]\nuser = "ops"\npassword = "not-a-secret"\n'
        '[[group]]\nname = "about"\nop = "about"\ncount = 2\n'
    ),
    "haystack": (
        'protocol = "haystack"\n[options]\nauth = false\n'
        '[[group]]\nname = "about"\nop = "about"\ncount = 2\n'
    ),
    "mqtt": (
        'protocol = "mqtt"\n[options]\nversion = "5"\n'
        '[[group]]\nname = "publish"\nop = "publish"\ncount = 2\ntopic = "t/{client}"\nqos = 1\n'
    ),
    "websocket": 'protocol = "websocket"\n[[group]]\nname = "echo"\nop = "echo"\ncount = 2\n',
    "bacnet": (
        'protocol = "bacnet-ip"\n[[group]]\nname = "read"\nop = "read-property"\ncount = 2\n'
        'objects = ["analog-input:1"]\n'
    ),
}
Server = Callable[[], AbstractContextManager[str]]
CASES: list[tuple[str, Server, bool]] = [
    # (profile, server, whether the plugin shows the server's words at all)
    ("http", http_reason_server, False),  # the status's standard phrase, not the server's
    ("haystack-login", http_reason_server, True),  # the login quotes the status reason
    ("haystack", haystack_error_server, True),
    ("mqtt", mqtt_disconnect_server, False),  # the reason code's name, not the string
    ("websocket", ws_close_server, True),
    ("bacnet", bacnet_error_server, False),  # class and code as numbers
]


def _run(args: list[str], cwd: Path, timeout: float = 120 * S) -> tuple[int, bytes, bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "protobench", *args],
        cwd=cwd,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("name", "server", "quoted"), CASES, ids=[case[0] for case in CASES]
)  # fmt: skip
def test_a_hostile_servers_words_reach_the_terminal_only_as_text(
    tmp_path: Path, name: str, server: Server, quoted: bool
) -> None:
    profile = tmp_path / f"{name}.toml"
    profile.write_text(f'name = "hostile-{name}"\n{PROFILES[name]}')
    with server() as url:
        code, out, err = _run(["run", str(profile), "--target", url, *QUICK], tmp_path)
    assert code in (1, 3), err  # every exchange failed
    assert b"Traceback" not in err
    assert_no_escapes(out + err, plain=True)
    assert b"100.00%" in out  # the run did meet the server's failures
    assert shown(out + err) is quoted, out.decode()


def test_a_tampered_snapshot_is_shown_as_text_by_show_list_diff_and_replay(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    hostile_snapshot(store, "20250101-000000-hostile-0001", f"host-a {EVERYTHING}")
    hostile_snapshot(store, "20250101-000100-hostile-0002", f"host-b{OSC_TITLE}")
    where = ("--snapshots-dir", str(store))
    for args in (
        ["snapshots", "show", "latest"],
        ["snapshots", "list"],
        ["diff", "latest~1", "latest"],
        ["replay", "latest"],  # stdout is not a terminal: the summary
    ):
        code, out, err = _run([*args, *where], tmp_path)
        assert code == 0, err
        assert_no_escapes(out + err, plain=True)
        if args[1] != "list":
            assert shown(out), f"{args}: {out.decode()}"
    code, out, _ = _run(["snapshots", "show", "latest", "--json", *where], tmp_path)
    assert code == 0
    report = json.loads(out)["report"]
    assert report["profile"] == f"profile {EVERYTHING}"  # the exact string, escaped by JSON
    assert b"\x1b" not in out
