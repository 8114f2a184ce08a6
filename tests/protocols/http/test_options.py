"""The HTTP options' HTTP/2 keys, and what the plan checks of them with a group's ``streams``.

``connection_share`` is the plan-time check: how many sessions share a connection,
or one line saying which key does not fit which other (exit 2 at the CLI).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from protobench.protocols.http.options import (
    MAX_STREAMS,
    HttpOptions,
    RequestParams,
    connection_share,
)


@pytest.mark.parametrize(("given", "version"), [(2, "2"), (1.1, "1.1"), ("h2c", "h2c")])
def test_version_takes_a_toml_number_or_a_name(given: object, version: str) -> None:
    assert HttpOptions(version=given).version == version  # type: ignore[arg-type]


@pytest.mark.parametrize("given", [3, "h3", True, "2.0"])
def test_other_versions_are_refused(given: object) -> None:
    with pytest.raises(ValidationError, match="version"):
        HttpOptions(version=given)  # type: ignore[arg-type]


def test_streams_are_bounded() -> None:
    assert RequestParams(streams=MAX_STREAMS).streams == MAX_STREAMS
    for bad in (0, MAX_STREAMS + 1):
        with pytest.raises(ValidationError, match="streams"):
            RequestParams(streams=bad)


@pytest.mark.parametrize(
    ("params", "options", "target", "share"),
    [
        ({}, {}, "http://h/", 1),
        ({"streams": 10}, {"version": "2"}, "https://h/", 10),
        ({"streams": 10}, {"version": 2}, "http://h/", 10),
        ({"streams": 7}, {"version": "h2c"}, "http://h/", 7),
        ({"streams": 3}, {"version": "h2c"}, None, 3),  # the embedded target
        ({}, {"version": "2", "fallback": True}, "https://h/", 1),
    ],
)
def test_sessions_share_a_connection_per_streams(
    params: dict[str, Any], options: dict[str, Any], target: str | None, share: int
) -> None:
    assert connection_share(params, options, target) == share


@pytest.mark.parametrize(
    ("params", "options", "target", "message"),
    [
        (
            {"streams": 2},
            {},
            "http://h/",
            r'streams = 2 needs HTTP/2: set the option version = "2"',
        ),
        ({}, {"fallback": True}, "https://h/", "fallback is HTTP/2's"),
        ({}, {"version": "h2c"}, "https://h/", "give an http:// target"),
        ({}, {"version": "2", "fallback": True}, "http://h/", "over TLS only"),
        ({"headers": {"Connection": "x"}}, {"version": "2"}, "http://h/", "forbidden in HTTP/2"),
        ({}, {"version": "2", "keepalive": False}, "http://h/", "HTTP/2 keeps its connections"),
    ],
)
def test_keys_that_do_not_fit_together_are_one_line(
    params: dict[str, Any], options: dict[str, Any], target: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        connection_share(params, options, target)
