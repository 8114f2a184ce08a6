"""``protobench report`` on the snapshot of a real run against the embedded HTTP target.

The page of a short open-model run holds every chart a real snapshot feeds
(throughput, latency, the corrected and uncorrected spectrum, counters,
resources), and, where Chromium is installed, draws them all without an error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.browser import browser, find_chromium
from tests.conftest import CliResult

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
        loaded = b.load(page, 150, timeout=60.0)
    assert loaded.errors == []
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert loaded.charts
    assert min(loaded.charts.values()) >= 150
