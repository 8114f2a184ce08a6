"""``protobench report`` on the snapshot of a real run against the embedded HTTP target.

The page of a short open-model run holds every chart a real snapshot feeds
(throughput, latency, the corrected and uncorrected spectrum, counters,
resources), and, where Chromium is installed, draws them all without an error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.browser import browser, find_chromium
from tests.support.cli import CliResult
from tests.support.timing import S

pytestmark = pytest.mark.integration

RUN = ["run", "http-get", "--rate", "300/s", "--duration", "2s", "--warmup", "1s"]


def test_report_of_a_real_run(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    ran = cli(*RUN, "--processes", "1", "--no-tui", "--quiet", "--json")
    assert ran.returncode == 0, ran.stderr
    page = tmp_path / "run.html"
    done = cli("report", "latest", "-o", str(page))
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    for name in ("throughput", "latency", "spectrum"):
        assert f'data-chart="op0-{name}"' in text
        assert f'data-chart="op1-{name}"' in text
    assert 'data-chart="res-cpu"' in text
    assert "uncorrected" in text
    chromium = find_chromium()
    if chromium is None:
        return
    with browser(chromium) as b:
        loaded = b.load(page, 150, timeout=60 * S)
    assert loaded.errors == []
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert loaded.charts
    assert min(loaded.charts.values()) >= 150


def test_run_and_diff_write_their_pages(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    run_page = tmp_path / "run.html"
    ran = cli(*RUN, "--processes", "1", "--no-tui", "--quiet", "--report", str(run_page))
    assert ran.returncode == 0, ran.stderr
    assert 'data-chart="op0-throughput"' in run_page.read_text()
    again = cli(*RUN, "--processes", "1", "--no-tui", "--quiet")
    assert again.returncode == 0, again.stderr
    diff_page = tmp_path / "diff.html"
    compared = cli("diff", "latest~1", "latest", "--report", str(diff_page))
    assert compared.returncode in {0, 4}, compared.stderr
    text = diff_page.read_text()
    assert "data-chart" in text
    assert "p99" in text
