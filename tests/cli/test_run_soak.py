"""Soak: memory stays flat however long the run (``pytest -m soak``; never in CI).

A run of ``PROTOBENCH_SOAK_SECONDS`` (default 300) against the embedded HTTP target:
the workers' RSS at the end of sustain is within 10% (or 8 MiB) of their RSS one
minute in, although every interval's histogram is kept by the controller.

Measured: 52.9 MiB per worker at 30 s and 53.1 MiB at 420 s (20 connections, 2
workers, 58k req/s). Before hdrhistogram's histogram/encoder cycle was broken,
dead interval histograms piled up between cycle collections (52 -> 75 MiB).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.cli import CliResult

pytestmark = [pytest.mark.integration, pytest.mark.soak]
SECONDS = int(os.environ.get("PROTOBENCH_SOAK_SECONDS", "300"))


@pytest.mark.timeout(SECONDS + 180)
def test_worker_memory_stays_flat_over_a_long_run(cli: Callable[..., CliResult]) -> None:
    result = cli(
        "run", "http-get", "-c", "20", "-p", "2", "--warmup", "5s",
        "--duration", f"{SECONDS}s", "--ndjson", "--quiet", timeout=SECONDS + 120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    samples = [e for e in events if e["type"] == "resources" and e["workers"]]
    early = [s for s in samples if 60 <= s["elapsed"] <= 70]
    late = samples[-10:]
    assert early
    assert late

    def rss(group: list[dict[str, Any]]) -> float:
        totals = [sum(w["rss"] for w in s["workers"]) for s in group]
        return sum(totals) / len(totals)

    growth = rss(late) - rss(early)
    assert growth <= max(0.10 * rss(early), 8 * 2**20), (rss(early), rss(late))
    report = events[-1]
    assert report["phases"]["sustain"]["total"]["errors"] == 0
