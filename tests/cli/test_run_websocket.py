"""Whole ``protobench run`` of the ws-echo profile: counts on both sides, corruption, TLS."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.cli import CliResult
from tests.support.targets import served

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "2s", "--json", "--quiet")


def _all(report: dict[str, Any], key: str) -> int:
    return sum(int(phase["total"][key]) for phase in report["phases"].values())


def _validation(report: dict[str, Any]) -> int:
    return sum(
        int(phase["total"]["errors_by_class"].get("validation", 0))
        for phase in report["phases"].values()
    )


def test_both_sides_count_the_same_and_corruption_is_caught(
    cli: Callable[..., CliResult],
) -> None:
    with served("ws", "--corrupt-every", "25") as target:
        result = cli("run", "ws-echo", "--target", target.url, "-c", "6", "-p", "2", *SHORT)
        stats = target.get_json("stats")
    assert result.returncode == 1, result.stderr
    report = result.json()
    assert report["phases"]["sustain"]["total"]["ok"] > 100
    assert stats["corrupted"] == stats["messages"] // 25 > 0
    assert _validation(report) == stats["corrupted"]
    assert _all(report, "ok") + _validation(report) == stats["messages"]
    assert set(report["phases"]["sustain"]["total"]["errors_by_class"]) == {"validation"}
    assert report["thresholds"][0]["ok"] is False


def test_embedded_tls_target_from_the_profile(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "ws-echo", "--serve-opt", "tls=true", "-c", "4", *SHORT)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["target"].startswith("wss://127.0.0.1:")
    assert report["phases"]["sustain"]["total"]["ok"] > 0
    assert report["phases"]["sustain"]["total"]["errors"] == 0
    assert report["thresholds"] == [{"expr": "error_rate <= 0%", "value": 0.0, "ok": True}]
