"""HTTP/2 runs against nginx (its ``http2`` module): its access log is the truth.

Every response nginx wrote is one line of its log, ``STATUS REQUEST-LINE`` with
the protocol it served (``$request`` ends in ``HTTP/2.0``); a run's ok count
over all phases must equal the count of those lines. h2c with prior knowledge
and h2 over TLS (a CA generated for the test), nginx's own GOAWAY every 50
requests (``keepalive_requests``), and a TLS server without HTTP/2: one clear
error, or HTTP/1.1 when the fallback is allowed. h2c is timed with the kernel's
clock, h2 over TLS in user space.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protobench.tlsutil import generate
from tests.support.cli import CliResult
from tests.support.html_snapshot import chart_data
from tests.support.nginx import nginx

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "2s", "--processes", "1", "--json", "--quiet")
SERVER = 'location / { default_type text/plain; return 200 "Hello, World!"; }'


def _phases(report: dict[str, Any], key: str) -> int:
    return sum(int(phase["total"][key]) for phase in report["phases"].values())


def _tls(tmp_path: Path) -> tuple[str, str]:
    pki = generate(tmp_path / "pki", ["server"])
    leaf = pki.leaves["server"]
    return (
        f"ssl_certificate {leaf.cert}; ssl_certificate_key {leaf.key}; {SERVER}",
        str(pki.ca.cert),
    )


def test_h2c_counts_exactly_what_nginx_served_over_http2(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    with nginx(tmp_path / "nginx", SERVER, "keepalive_requests 1000000;", "http2") as server:
        result = cli("run", f"{server.url}/", "--h2c", "-c", "2", "--streams", "10", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    served = server.requests()
    assert set(served) == {"200 GET / HTTP/2.0"}
    assert _phases(report, "errors") == 0
    assert _phases(report, "ok") == len(served) > 100
    assert report["protocols"] == {"get": {"h2c": 20}}
    assert report["clock"] == {"setting": "kernel", "receive": "kernel", "send": "kernel"}
    assert report["model"]["connections"] == 2
    streams = report["phases"]["sustain"]["ops"]["get"]["streams_per_connection"]
    assert 1 <= streams <= 10
    page = cli("report", "latest", "-o", str(tmp_path / "r.html"))
    assert page.returncode == 0, page.stderr
    _the_page_draws_the_streams(tmp_path / "r.html", streams)


def _the_page_draws_the_streams(path: Path, streams: float) -> None:
    """The HTML report of the run: the streams in flight per connection in its table, and
    drawn per interval (not as samples per second among the counters) in its one op's chart."""
    page = path.read_text()
    assert f"protocol: h2c (20 sessions), {streams:g} streams in flight per connection" in page
    data = chart_data(page)
    chart = data["charts"]["overview-counters"]
    (drawn,) = [s for s in chart["series"] if s["label"] == "streams in flight per connection"]
    values = [v for v in data["columns"][drawn["y"]] if v is not None]
    assert values
    assert all(1 <= v <= 10 for v in values)
    assert not {s["label"] for s in chart["series"]} & {"stream_samples", "connection_samples"}


def test_h2_over_tls_with_a_generated_ca(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    server_conf, ca = _tls(tmp_path)
    with nginx(
        tmp_path / "nginx", server_conf, "keepalive_requests 1000000;", "ssl http2", "https"
    ) as server:
        result = cli(
            "run", f"{server.url}/", "--http2", "--ca-file", ca, "-c", "1", "--streams", "8", *SHORT
        )
    assert result.returncode == 0, result.stderr
    report = result.json()
    served = server.requests()
    assert set(served) == {"200 GET / HTTP/2.0"}
    assert _phases(report, "ok") == len(served) > 50
    assert report["protocols"] == {"get": {"h2": 8}}
    assert report["clock"]["receive"] == "user"  # TLS: read on the event loop's transport


def test_nginx_going_away_every_50_requests_loses_and_doubles_nothing(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    with nginx(tmp_path / "nginx", SERVER, "keepalive_requests 50;", "http2") as server:
        result = cli("run", f"{server.url}/", "--h2c", "-c", "1", "--streams", "20", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    served = server.requests()
    ok = _phases(report, "ok")
    assert _phases(report, "errors") == 0
    assert ok == len(served) > 200
    connects = sum(
        phase["ops"]["get"]["counters"].get("connects", 0) for phase in report["phases"].values()
    )
    assert ok // 50 <= connects <= ok // 50 + 2


def test_a_tls_server_without_http2_is_one_clear_error_or_http1_when_allowed(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    server_conf, ca = _tls(tmp_path)
    with nginx(tmp_path / "nginx", server_conf, "", "ssl", "https") as server:
        refused = cli("run", f"{server.url}/", "--http2", "--ca-file", ca, "-c", "2", *SHORT)
        fallen = cli(
            "run",
            f"{server.url}/",
            "--http2",
            "--http2-fallback",
            "--ca-file",
            ca,
            "-c",
            "2",
            *SHORT,
        )
    assert refused.returncode == 3
    assert "does not speak HTTP/2 over TLS: offered h2, the server chose http/1.1" in (
        refused.stderr + refused.stdout
    )
    assert fallen.returncode == 0, fallen.stderr
    report = fallen.json()
    assert report["protocols"] == {"get": {"http/1.1": 2}}
    assert _phases(report, "ok") == len(server.requests()) > 50
    assert set(server.requests()) == {"200 GET / HTTP/1.1"}
