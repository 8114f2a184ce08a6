"""``protobench discover``: one path for every plugin that discovers; bad input exits 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from protobench.cli import app
from protobench.protocols import registry

EXPECTED = "discover: expected a bacnet:// URL or `haystack URL`"


def test_the_plugins_that_discover_say_so() -> None:
    found = {name for name in registry.names() if registry.load(name).discovers()}
    assert found == {"bacnet-ip", "haystack"}
    assert registry.load("bacnet-ip").discover_by_scheme
    assert not registry.load("haystack").discover_by_scheme  # http(s):// is shared


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["mqtt://127.0.0.1/"], f"{EXPECTED}, got 'mqtt://127.0.0.1/'"),
        (["http"], f"{EXPECTED}, got 'http'"),
        (["http", "http://127.0.0.1/"], f"{EXPECTED}, got 'http'"),
        (["bacnet://127.0.0.1/", "http://127.0.0.1/"], f"{EXPECTED}, got 'bacnet://127.0.0.1/'"),
        (["haystack"], "discover haystack: give the URL to ask"),
        (["bacnet://127.0.0.1:99999/"], "discover: bad port in 'bacnet://127.0.0.1:99999/'"),
        (["haystack", "bacnet://127.0.0.1/"], "discover haystack: bad URL 'bacnet://127.0.0.1/'"),
        (["bacnet://127.0.0.1/", "--opt", "nope=1"], "--opt nope: Extra inputs are not permitted"),
        (
            ["haystack", "http://127.0.0.1:9/api", "--opt", "nope=1"],
            "--opt nope: Extra inputs are not permitted",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_before_any_request(args: list[str], line: str) -> None:
    result = CliRunner().invoke(app, ["discover", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1
    assert line in result.stderr
