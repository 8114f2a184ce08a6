"""One-line HTTP/2 runs against the embedded target: h2 over TLS in the open model, and the
flags that do not fit together.

The target's delay is a floor of every stream's latency (it never answers sooner; in
the open model the latency runs from the intended time, so it can only add). A server
without HTTP/2 is one line at open. A flag combination that cannot work is one line
and exit 2 before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from protobench.tlsutil import split_url_files
from tests.support.cli import CliResult
from tests.support.targets import served

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "2s", "--processes", "1", "--json", "--quiet")


def test_h2_over_tls_in_the_open_model_has_the_delay_in_every_streams_latency(
    cli: Callable[..., CliResult],
) -> None:
    with served("http", "--tls", "--delay", "50ms") as server:
        url, files = split_url_files(server.url)  # the mock CA's file, for --ca-file
        ca = files["ca_file"]
        result = cli(
            "run",
            url,
            "--http2",
            "--ca-file",
            ca,
            "-c",
            "2",
            "--streams",
            "5",
            "-r",
            "100/s",
            *SHORT,
        )
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["protocols"] == {"get": {"h2": 10}}
    assert report["model"]["connections"] == 2
    assert report["model"]["type"] == "open"
    sustain = report["phases"]["sustain"]["total"]
    assert sustain["errors"] == 0
    assert sustain["ok"] > 50
    assert sustain["latency_us"]["min"] >= 50_000
    assert report["clock"]["receive"] == "user"  # TLS: the event loop's transport


def test_h2c_against_an_http1_only_target_is_one_line_not_timeouts(
    cli: Callable[..., CliResult],
) -> None:
    with served("http", "--no-h2") as server:
        result = cli("run", server.url, "--h2c", "-c", "2", *SHORT)
    assert result.returncode == 3
    out = result.stderr + result.stdout
    assert "does not speak cleartext HTTP/2" in out
    assert "sent no HTTP/2 SETTINGS" not in out  # told at once, not after --timeout


@pytest.mark.parametrize(
    ("url", "flags", "message"),
    [
        ("http://127.0.0.1:9/", ["--streams", "4"], "needs HTTP/2"),
        ("https://127.0.0.1:9/", ["--h2c"], "give an http:// target"),
        ("http://127.0.0.1:9/", ["--http2", "--http2-fallback"], "over TLS only"),
        ("http://127.0.0.1:9/", ["--h2c", "--disable-keepalive"], "HTTP/2 keeps"),
        ("http://127.0.0.1:9/", ["--h2c", "-H", "Connection: close"], "forbidden in HTTP/2"),
    ],
)
def test_flags_that_do_not_fit_exit_2_with_one_line(
    cli: Callable[..., CliResult], url: str, flags: list[str], message: str
) -> None:
    result = cli("run", url, *flags, *SHORT)
    assert result.returncode == 2
    assert message in result.stderr
