"""The plugin contract's defaults: latency kinds, diagnosis, target checks without secrets."""

from __future__ import annotations

import pytest

from protobench.protocols import registry
from protobench.protocols.base import LATENCY_KINDS


@pytest.mark.parametrize(
    ("protocol", "url"),
    [("http", "http://bob:hunter2@127.0.0.1:8080/"), ("mqtt", "ftp://bob:hunter2@127.0.0.1:1883/")],
)
def test_a_refused_target_url_never_shows_its_password(protocol: str, url: str) -> None:
    with pytest.raises(ValueError, match=r"bob:<secret>@127\.0\.0\.1") as refused:
        registry.load(protocol).check_target(url)
    assert "hunter2" not in str(refused.value)


def test_ops_measure_round_trips_and_find_nothing_by_default() -> None:
    plugin = registry.load("http")
    assert plugin.latency_kind("request") == "round_trip"
    assert plugin.latency_kind("request") in LATENCY_KINDS
    assert plugin.diagnose({"request": {"reconnects": 3}}) == []
