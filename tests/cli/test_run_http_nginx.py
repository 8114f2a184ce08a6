"""Runs against nginx, an HTTP server we did not write: its access log is the truth.

Every response nginx wrote is one line of its access log; a run's ok count
over all phases must equal it (no response lost, none counted twice). The
cases: keep-alive, ``Connection: close`` after every response (each request
needs a new connection: the ``connects`` counter shows the rate) and a body
delimited by the close (gzip with chunked encoding off: RFC 9112 section 6.3,
rule 8).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliResult
from tests.support.nginx import nginx

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "2s", "--processes", "1", "--json", "--quiet")
BODY = "x" * 300
SERVER = f"""
location / {{ default_type text/html; return 200 "{BODY}"; }}
location /close {{ keepalive_timeout 0; default_type text/plain; return 200 "bye"; }}
location /gz {{
  chunked_transfer_encoding off; gzip on; gzip_min_length 1;
  default_type text/html; return 200 "{BODY}";
}}
"""


def _profile(tmp_path: Path, path: str | None = None, headers: str = "") -> Path:
    profile = tmp_path / "nginx.toml"
    lines = ['name = "nginx"', 'protocol = "http"', "[[group]]", 'name = "get"', 'op = "request"']
    lines.append("count = 4")
    if path is not None:
        lines.append(f"path = {path!r}")
    if headers:
        lines += ["[group.headers]", headers]
    profile.write_text("\n".join(lines) + "\n")
    return profile


def _phases(report: dict[str, Any], key: str) -> int:
    return sum(int(phase["total"][key]) for phase in report["phases"].values())


def _connects(report: dict[str, Any]) -> int:
    return sum(
        int(phase["ops"]["get"].get("counters", {}).get("connects", 0))
        for phase in report["phases"].values()
    )


def test_ok_count_equals_nginx_log_and_the_target_path_is_requested_as_given(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    # nginx closes a keep-alive connection after 1,000 requests by default
    with nginx(tmp_path / "nginx", SERVER, "keepalive_requests 1000000;") as server:
        result = cli("run", str(_profile(tmp_path)), "--target", f"{server.url}/big.bin", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    served = server.requests()
    assert set(served) == {"200 GET /big.bin HTTP/1.1"}
    assert _phases(report, "errors") == 0
    assert _phases(report, "ok") == len(served) > 100
    assert _phases(report, "bytes_in") > 300 * len(served)
    assert _connects(report) <= 4  # keep-alive: no connection reopened (at most the opens)


def test_connects_count_the_connections_nginx_closes_after_its_keepalive_requests(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    with nginx(tmp_path / "nginx", SERVER, "keepalive_requests 10;") as server:
        result = cli("run", str(_profile(tmp_path)), "--target", server.url, *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    ok = _phases(report, "ok")
    assert _phases(report, "errors") == 0
    assert ok == len(server.requests()) > 100
    assert ok // 10 - 4 <= _connects(report) <= ok // 10 + 8


def test_connection_close_server_is_ok_and_shows_its_connection_rate(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    with nginx(tmp_path / "nginx", SERVER) as server:
        result = cli("run", str(_profile(tmp_path)), "--target", f"{server.url}/close", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    ok = _phases(report, "ok")
    assert _phases(report, "errors") == 0
    assert ok == len(server.requests()) > 20
    # one new connection per request, the sessions' first ones counted or not
    assert ok - 4 <= _connects(report) <= ok + 8


def test_close_delimited_body_from_nginx_is_ok(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    profile = _profile(tmp_path, "/gz", 'Accept-Encoding = "gzip"')
    with nginx(tmp_path / "nginx", SERVER) as server:
        result = cli("run", str(profile), "--target", server.url, *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    served = server.requests()
    assert set(served) == {"200 GET /gz HTTP/1.1"}
    assert _phases(report, "errors") == 0
    ok = _phases(report, "ok")
    assert ok == len(served) > 20
    assert ok - 4 <= _connects(report) <= ok + 8
