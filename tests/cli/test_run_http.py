"""The http-get profile and http options through ``protobench run`` (a few seconds each)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import CliResult
from tests.support.http_server import http_target

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "2s", "--processes", "1", "--json", "--quiet")


def test_http_get_against_the_embedded_target(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "http-get", "--connections", "8", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["protocol"] == "http"
    assert report["target_kind"] == "protobench http target"
    sustain = report["phases"]["sustain"]
    assert sustain["total"]["ok"] > 100
    assert sustain["total"]["errors"] == 0
    assert sustain["ops"]["get"]["ok"] == sustain["total"]["ok"]
    assert sustain["total"]["bytes_in"] == 98 * sustain["total"]["ok"]
    assert [t["ok"] for t in report["thresholds"]] == [True]


def test_bytes_out_are_the_requests_the_target_served(cli: Callable[..., CliResult]) -> None:
    with http_target() as target:
        result = cli("run", "http-get", "--target", target.url, "--connections", "4", *SHORT)
        served = target.served()
    assert result.returncode == 0, result.stderr
    phases = result.json()["phases"]
    host = target.url.removeprefix("http://").rstrip("/")
    request = f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    assert served > 100
    assert sum(phase["total"]["bytes_out"] for phase in phases.values()) == served * len(request)
    sustain = phases["sustain"]
    assert sustain["ops"]["get"]["bytes_out"] == sustain["total"]["bytes_out"] > 0
    assert list(sustain["total"]).index("bytes_out") == list(sustain["total"]).index("bytes_in") + 1


def test_unexpected_status_fails_the_threshold_with_coded_errors(
    cli: Callable[..., CliResult],
) -> None:
    result = cli("run", "http-get", "--connections", "4", "--serve-opt", "status=503", *SHORT)
    assert result.returncode == 1, result.stderr
    total = result.json()["phases"]["sustain"]["total"]
    assert total["ok"] == 0
    assert total["errors"] > 100
    assert total["errors_by_class"] == {"protocol": total["errors"]}
    assert total["error_codes"] == {"protocol:503": total["errors"]}


def test_post_profile_with_a_secret_header(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    (tmp_path / "body.json").write_text('{"order": 1}')
    (tmp_path / "post.toml").write_text(
        'name = "post"\nprotocol = "http"\n'
        "[[group]]\n"
        'name = "create"\nop = "request"\ncount = 4\nmethod = "POST"\npath = "/orders"\n'
        'body_file = "body.json"\nexpect_status = [200, 201]\n'
        '[group.headers]\nAuthorization = "Bearer s3cr3t-token"\nX-Trace = "visible-trace"\n'
    )
    result = cli("run", "post.toml", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["phases"]["sustain"]["ops"]["create"]["ok"] > 100
    with gzip.open(report["snapshot"], "rt") as stored:
        snapshot = stored.read()
    for text in (result.stdout, snapshot):
        assert "s3cr3t-token" not in text
        assert '{"order": 1}' not in text
    assert "visible-trace" in snapshot
    assert json.dumps("<secret>") in snapshot
