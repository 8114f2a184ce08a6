"""Whole runs against hostile servers (:mod:`tests.integration.hostile`): whatever the
server sends, the run's memory stays bounded, the excess is one ``protocol`` error per
failed exchange with a text naming the limit, and the session goes on on a new connection.

Each server streams as fast as the client reads and far more than the limit, so a client
that kept it would hold hundreds of MiB; the assertions leave wide margins (a run's tree,
controller and fork server and worker, takes 150-250 MiB on its own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.hostile import hostile
from tests.integration.processes import MiB, run_watched

SHORT = ("-p", "1", "--warmup", "0s", "--duration", "3s", "--interval", "250ms", "--json")


def _profile(tmp_path: Path, text: str) -> str:
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    return str(path)


def _total(report: dict[str, Any]) -> dict[str, Any]:
    total: dict[str, Any] = report["phases"]["sustain"]["total"]
    return total


def _no_worker_lost(report: dict[str, Any]) -> None:
    notices = [n["message"] for n in report["notices"]]
    assert not any("hung" in n or "died" in n for n in notices), notices
    assert not report["partial"]


def test_endless_response_headers_are_refused_at_64_kib(tmp_path: Path) -> None:
    with hostile("http-endless-head") as server:
        url = f"http://127.0.0.1:{server.port}/"
        result, peak = run_watched(["run", "http-get", "-t", url, "-c", "2", *SHORT], tmp_path)
        seen = server.seen()
    report = result.json()
    total = _total(report)
    assert total["ok"] == 0
    assert total["errors_by_class"].get("protocol", 0) >= 2, total
    assert "header block over 64 KiB" in total["last_errors"]["protocol"]
    # one error per exchange: each failed exchange closed its connection, the next opened one
    assert seen["requests"] >= total["errors"]
    assert seen["most"] < 16 * MiB, seen  # the client stopped reading at the limit
    assert peak < 400 * MiB, peak
    _no_worker_lost(report)


def test_an_endless_haystack_body_is_refused_at_64_mib(tmp_path: Path) -> None:
    profile = _profile(
        tmp_path,
        'name = "hostile"\nprotocol = "haystack"\n[options]\nauth = false\n'
        '[[group]]\nname = "about"\nop = "about"\ncount = 2\n',
    )
    with hostile("http-endless-body") as server:
        url = f"http://127.0.0.1:{server.port}/api"
        result, peak = run_watched(["run", profile, "-t", url, *SHORT], tmp_path)
        seen = server.seen()
    report = result.json()
    total = _total(report)
    assert total["ok"] == 0
    assert total["errors_by_class"].get("protocol", 0) >= 1, total
    assert "response body over 64 MiB" in total["last_errors"]["protocol"]
    assert seen["most"] < 128 * MiB, seen
    # two connections at 64 MiB each at most, never the hundreds of MiB sent to them
    assert peak < 600 * MiB, peak
    _no_worker_lost(report)


def test_an_mqtt_packet_over_the_maximum_size_closes_the_connection_at_once(
    tmp_path: Path,
) -> None:
    profile = _profile(
        tmp_path,
        'name = "hostile"\nprotocol = "mqtt"\n'
        '[[group]]\nname = "pub"\nop = "publish"\nqos = 1\ncount = 2\n',
    )
    with hostile("mqtt-big-packet") as server:
        url = f"mqtt://127.0.0.1:{server.port}"
        result, peak = run_watched(["run", profile, "-t", url, *SHORT], tmp_path)
        seen = server.seen()
    report = result.json()
    assert result.returncode == 3, result.stderr  # no session could open
    total = _total(report)
    assert total["errors_by_class"].get("protocol", 0) >= 2, total
    assert "packet over max_packet_size (16 MiB): 268435460 B" in total["last_errors"]["protocol"]
    # refused from the fixed header: nothing of the 256 MiB was waited for
    assert seen["most"] < 64 * MiB, seen
    assert seen["connections"] >= 2
    assert peak < 400 * MiB, peak
    _no_worker_lost(report)


def test_a_websocket_frame_claiming_2_63_bytes_is_a_protocol_error(tmp_path: Path) -> None:
    """The frame comes in the handshake's own read: the open fails with the frame's error
    (it never reaches a session as a closed transport, a local RuntimeError)."""
    with hostile("ws-huge-frame") as server:
        url = f"ws://127.0.0.1:{server.port}/"
        result, _ = run_watched(["run", "ws-echo", "-t", url, "-c", "2", *SHORT], tmp_path)
        server.seen()
    report = result.json()
    total = _total(report)
    assert set(total["errors_by_class"]) == {"protocol"}, total
    detail = "frame length over max_size (16 MiB): 9223372036854775807 B"
    assert detail in total["last_errors"]["protocol"]
    _no_worker_lost(report)


def test_after_a_websocket_protocol_error_the_session_reconnects_one_error_per_exchange(
    tmp_path: Path,
) -> None:
    """Every echo is answered with a deflate bomb (64 MiB inflated): each is one error and
    ends its connection; the session opens a new one instead of failing again and again."""
    args = ["run", "ws-echo", "-c", "2", "-o", "compression=true", *SHORT]
    with hostile("ws-bomb") as server:
        url = f"ws://127.0.0.1:{server.port}/"
        result, peak = run_watched([*args, "-t", url], tmp_path)
        seen = server.seen()
    report = result.json()
    total = _total(report)
    assert total["ok"] == 0
    # one error per message the server answered (not the same error again and again)
    assert 2 <= total["errors"] <= seen["requests"], (total["errors"], seen)
    assert set(total["errors_by_class"]) == {"protocol"}, total
    assert "frame length over max_size (16 MiB)" in total["last_errors"]["protocol"]
    assert total["counters"]["reconnects"] >= total["errors"] - 2
    assert peak < 400 * MiB, peak  # each bomb's 16 MiB freed with its connection
    _no_worker_lost(report)
