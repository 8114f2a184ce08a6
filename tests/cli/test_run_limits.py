"""Whole runs against hostile servers (:mod:`tests.support.hostile_sizes`): whatever the
server sends, the run's memory stays bounded, the excess is one ``protocol`` error per
failed exchange with a text naming the limit, and the session goes on on a new connection.

Each server streams as fast as the client reads and far more than the limit, so a client
that kept it would hold hundreds of MiB; the assertions leave wide margins (a run's tree,
controller and fork server and worker, takes 150-250 MiB on its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.hostile_sizes import hostile
from tests.support.processes import MiB, run_watched

pytestmark = pytest.mark.integration

SHORT = ("-p", "1", "--warmup", "0s", "--duration", "3s", "--interval", "250ms", "--json")


@dataclass
class Outcome:
    """A run against a hostile server: its exit code and report, its sustain total, the
    peak RSS of its process tree, and what the server saw."""

    returncode: int
    report: dict[str, Any]
    total: dict[str, Any]
    peak: int
    seen: dict[str, int]


def _against(tmp_path: Path, mode: str, target: str, *args: str) -> Outcome:
    """``protobench run ARGS`` against hostile server ``mode`` (``target``'s ``{port}``)."""
    with hostile(mode) as server:
        url = target.format(port=server.port)
        result, peak = run_watched(["run", *args, "-t", url, *SHORT], tmp_path)
        seen = server.seen()
    report = result.json()
    # every worker lived to the end and reported (none blocked, killed or out of memory); a
    # run whose sessions never opened may stop early, but keeps its data
    assert all(w["completed"] and w["error"] is None for w in report["workers"]), report
    assert report["stop_reason"] in {"completed", "no-session"}, report["stop_reason"]
    return Outcome(result.returncode, report, report["phases"]["sustain"]["total"], peak, seen)


def _profile(tmp_path: Path, text: str) -> str:
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    return str(path)


def test_endless_response_headers_are_refused_at_64_kib(tmp_path: Path) -> None:
    run = _against(tmp_path, "http-endless-head", "http://127.0.0.1:{port}/", "http-get", "-c", "2")
    total = run.total
    assert total["ok"] == 0
    assert total["errors_by_class"].get("protocol", 0) >= 2, total
    assert "header block over 64 KiB" in total["last_errors"]["protocol"]
    # one error per exchange: each failed exchange closed its connection, the next opened one
    assert run.seen["requests"] >= total["errors"]
    assert run.seen["most"] < 16 * MiB, run.seen  # the client stopped reading at the limit
    assert run.peak < 400 * MiB, run.peak


def test_an_endless_haystack_body_is_refused_at_64_mib(tmp_path: Path) -> None:
    profile = _profile(
        tmp_path,
        'name = "hostile"\nprotocol = "haystack"\n[options]\nauth = false\n'
        '[[group]]\nname = "about"\nop = "about"\ncount = 2\n',
    )
    run = _against(tmp_path, "http-endless-body", "http://127.0.0.1:{port}/api", profile)
    total = run.total
    assert total["ok"] == 0
    assert total["errors_by_class"].get("protocol", 0) >= 1, total
    assert "response body over 64 MiB" in total["last_errors"]["protocol"]
    assert run.seen["most"] < 128 * MiB, run.seen
    # two connections at 64 MiB each at most, never the hundreds of MiB sent to them
    assert run.peak < 600 * MiB, run.peak


def test_an_mqtt_packet_over_the_maximum_size_closes_the_connection_at_once(
    tmp_path: Path,
) -> None:
    profile = _profile(
        tmp_path,
        'name = "hostile"\nprotocol = "mqtt"\n'
        '[[group]]\nname = "pub"\nop = "publish"\nqos = 1\ncount = 2\n',
    )
    run = _against(tmp_path, "mqtt-big-packet", "mqtt://127.0.0.1:{port}", profile)
    total = run.total
    assert total["errors_by_class"].get("protocol", 0) >= 2, total
    assert "packet over max_packet_size (16 MiB): 268435460 B" in total["last_errors"]["protocol"]
    # refused from the fixed header: nothing of the 256 MiB was waited for
    assert run.seen["most"] < 64 * MiB, run.seen
    assert run.seen["connections"] >= 2
    assert run.peak < 400 * MiB, run.peak


def test_a_websocket_frame_claiming_2_63_bytes_is_a_protocol_error(tmp_path: Path) -> None:
    """The frame comes in the handshake's own read: the open fails with the frame's error
    (it never reaches a session as a closed transport, a local RuntimeError)."""
    run = _against(tmp_path, "ws-huge-frame", "ws://127.0.0.1:{port}/", "ws-echo", "-c", "2")
    total = run.total
    assert set(total["errors_by_class"]) == {"protocol"}, total
    detail = "frame length over max_size (16 MiB): 9223372036854775807 B"
    assert detail in total["last_errors"]["protocol"]


def test_after_a_websocket_protocol_error_the_session_reconnects_one_error_per_exchange(
    tmp_path: Path,
) -> None:
    """Every echo is answered with a deflate bomb (64 MiB inflated): each is one error and
    ends its connection; the session opens a new one instead of failing again and again."""
    args = ("ws-echo", "-c", "2", "-o", "compression=true")
    run = _against(tmp_path, "ws-bomb", "ws://127.0.0.1:{port}/", *args)
    total = run.total
    assert total["ok"] == 0
    # one error per message the server answered (not the same error again and again)
    assert 2 <= total["errors"] <= run.seen["requests"], (total["errors"], run.seen)
    assert set(total["errors_by_class"]) == {"protocol"}, total
    assert "frame length over max_size (16 MiB)" in total["last_errors"]["protocol"]
    assert total["counters"]["reconnects"] >= total["errors"] - 2
    assert run.peak < 400 * MiB, run.peak  # each bomb's 16 MiB freed with its connection
