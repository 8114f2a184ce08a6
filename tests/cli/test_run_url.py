"""One-line runs (``protobench run URL -H ... -n N``) against nginx, whose access log is the truth.

nginx logs each request's method, path, ``X-Test`` header, ``Content-Length``,
Basic-auth user, ``Host`` and connection number: the one-liner's flags must
show there as given; ``-n N`` must be exactly N requests in nginx's log (and
the sustain's count), over several workers, in the closed and the open model;
``--disable-keepalive`` a connection per request; ``--connect-to`` and
``--resolve`` another address with the URL's ``Host``; ``-k``/``--ca-file``
TLS; and a saved profile (``--save-profile``) the same requests again, its
secret headers in a file only its owner may read.
"""

from __future__ import annotations

import socket
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protobench.tlsutil import generate
from tests.support.cli import CliResult
from tests.support.nginx import Nginx, nginx

pytestmark = pytest.mark.integration

QUIET = ("--json", "--quiet", "--no-tui")
FIELDS = "$request_method $uri $http_x_test $content_length $remote_user $http_host $connection"
LOG_FORMAT = f"log_format line '{FIELDS}';"


def _server(root: Path, extra: str = "") -> str:
    return f"""
access_log {root / "logs" / "line.log"} line;
location / {{ default_type text/plain; return 200 "ok"; }}
location /created {{ return 201; }}
{extra}
"""


def _lines(server: Nginx) -> list[list[str]]:
    log = server.log.parent / "line.log"
    return [line.split(" ") for line in log.read_text().splitlines()] if log.exists() else []


def _ok(report: dict[str, Any], phase: str = "sustain") -> int:
    section = report["phases"].get(phase)
    return 0 if section is None else int(section["total"]["ok"])


def _all_ok(report: dict[str, Any]) -> int:
    return sum(int(p["total"]["ok"]) for p in report["phases"].values())


def test_the_flags_show_in_nginxs_log_method_header_body_length_and_user(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        result = cli(
            "run", f"{server.url}/api", "-m", "put", "-H", "X-Test: one", "--data", "hello world",
            "-a", "user:pw", "-n", "100", "-c", "4", "-p", "2", *QUIET,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["model"]["requests"] == 100
    assert _ok(report) == 100
    assert report["phases"]["sustain"]["total"]["errors"] == 0
    host = server.url.removeprefix("http://")
    assert {" ".join(line[:6]) for line in _lines(server)} == {f"PUT /api one 11 user {host}"}
    assert len(_lines(server)) == 100


@pytest.mark.parametrize(
    "args",
    [
        ("-n", "1000", "-c", "8", "-p", "2"),
        ("-n", "5", "-c", "8", "-p", "2"),
        ("-n", "400", "-r", "4000/s", "-c", "8", "-p", "2"),
        ("-n", "300", "--warmup", "500ms", "-c", "4", "-p", "2"),
        ("-n", "200", "-c", "3", "-p", "1", "--data", "x"),
    ],
    ids=["closed", "fewer-than-sessions", "open", "after-a-warmup", "post"],
)
def test_n_requests_are_exactly_n_in_nginxs_log(
    args: tuple[str, ...], cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    count = int(args[1])
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        result = cli("run", f"{server.url}/n", *args, *QUIET)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert _ok(report) == count  # the sustain: exactly N, a warmup's exchanges apart
    assert len(_lines(server)) == _all_ok(report) == count + _ok(report, "warmup")
    assert report["partial"] is False
    assert report["stop_reason"] == "completed"


def test_a_duration_ends_a_count_it_does_not_reach(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        result = cli(
            "run", server.url, "-n", "100000000", "-d", "1s", "-c", "2", "-p", "1", *QUIET
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert 0 < _ok(report) < 100_000_000
    assert len(_lines(server)) == _all_ok(report)
    assert any(n["kind"] == "requests" for n in report["notices"])


def test_disable_keepalive_opens_a_connection_per_request(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        result = cli(
            "run", server.url, "--disable-keepalive", "-n", "60", "-c", "2", "-p", "1", *QUIET
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = _lines(server)
    assert len(lines) == 60
    assert len({line[6] for line in lines}) == 60  # nginx's connection serial numbers
    counters = result.json()["phases"]["sustain"]["total"]["counters"]
    assert counters["connects"] >= 58  # each reopened connection (the first two: the opens)


@pytest.mark.parametrize("form", ["connect-to", "connect-to-4", "resolve"])
def test_connect_to_and_resolve_keep_the_urls_host(
    form: str, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        port = server.url.rsplit(":", 1)[1]
        url, flag = {
            "connect-to": ("http://api.example.test/", ["--connect-to", f"127.0.0.1:{port}"]),
            "connect-to-4": (
                "http://api.example.test/",
                ["--connect-to", f"api.example.test:80:127.0.0.1:{port}"],
            ),
            "resolve": (
                f"http://api.example.test:{port}/",
                ["--resolve", f"api.example.test:{port}:127.0.0.1"],
            ),
        }[form]
        result = cli("run", url, *flag, "-n", "20", "-c", "2", "-p", "1", *QUIET)
    assert result.returncode == 0, result.stderr
    expected = "api.example.test" + (f":{port}" if form == "resolve" else "")
    assert {line[5] for line in _lines(server)} == {expected}  # the Host header sent
    assert len(_lines(server)) == 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("trust", ["ca-file", "insecure"])
def test_https_with_a_ca_file_or_insecure(
    trust: str, cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    pki = generate(tmp_path / "pki", ["server"])
    port = _free_port()
    root = tmp_path / "nginx"
    leaf = pki.leaves["server"]
    tls = f"listen 127.0.0.1:{port} ssl; ssl_certificate {leaf.cert};"
    tls += f" ssl_certificate_key {leaf.key};"
    flag = ["--ca-file", str(pki.ca.cert)] if trust == "ca-file" else ["-k"]
    with nginx(root, _server(root, tls), LOG_FORMAT):
        result = cli(
            "run", f"https://127.0.0.1:{port}/tls", *flag, "-n", "30", "-c", "2", "-p", "1", *QUIET
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _ok(result.json()) == 30


def test_expect_status(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        good = cli("run", f"{server.url}/created", "--expect-status", "201,202", "-n", "10", *QUIET)
        bad = cli("run", f"{server.url}/created", "--expect-status", "200", "-n", "10", *QUIET)
    assert good.returncode == 0, good.stderr
    assert bad.returncode == 1, bad.stderr
    assert bad.json()["phases"]["sustain"]["total"]["error_codes"] == {"protocol:201": 10}


def test_a_saved_profile_sends_the_same_requests_and_keeps_its_secrets_apart(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    flags = (
        "-m", "POST", "-H", "X-Test: saved", "-a", "user:S3CRETpw", "-H", "X-Api-Key: S3CRETk",
        "-T", "application/json", "--data", '{"a": 1}', "-n", "40", "-c", "2", "-p", "1",
    )  # fmt: skip
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        first = cli("run", f"{server.url}/s", *flags, "--save-profile", "api.toml", *QUIET)
        assert first.returncode == 0, first.stderr
        seen = len(_lines(server))
        again = cli("run", "api.toml", *QUIET)
    assert again.returncode == 0, again.stderr
    lines = [" ".join(line[:5]) for line in _lines(server)]
    assert lines[:seen] == lines[seen:] == ["POST /s saved 8 user"] * 40
    text = (tmp_path / "api.toml").read_text()
    assert "S3CRET" not in text
    assert "dXNlcjpTM0NSRVRwdw" not in text
    profile = tomllib.loads(text)
    assert profile["requests"] == 40
    assert profile["group"][0]["headers_file"] == "api.headers"
    headers = tmp_path / "api.headers"
    assert stat.S_IMODE(headers.stat().st_mode) == 0o600
    assert "X-Api-Key: S3CRETk" in headers.read_text()
    assert "wrote api.toml and api.headers" in first.stderr
    refused = cli("run", f"{server.url}/s", "--save-profile", "api.toml", *QUIET)
    assert refused.returncode == 2
    assert "api.toml exists" in refused.stderr


def test_a_sweep_of_a_url_runs_each_level_with_its_flags(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    root = tmp_path / "nginx"
    with nginx(root, _server(root), LOG_FORMAT) as server:
        result = cli(
            "sweep", f"{server.url}/sweep", "--vary", "connections=1,3", "-n", "50",
            "-H", "X-Test: sweep", "-p", "1", "--json", "--quiet",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    points = result.json()["points"]
    assert [p["assignment"] for p in points] == [{"connections": 1}, {"connections": 3}]
    lines = _lines(server)
    assert len(lines) == 100
    assert {" ".join(line[:3]) for line in lines} == {"GET /sweep sweep"}
