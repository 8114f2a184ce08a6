"""``protobench report`` on the snapshots of real runs against embedded targets.

The page of a short open-model HTTP run holds every chart a real snapshot feeds
(throughput with the offered rate, latency, the corrected and uncorrected
spectrum, counters, resources) and, where Chromium is installed, draws them all
without an error. The bacnet-ip built-in (closed model, one periodic group)
has a TOTAL that is the merge of all its operations, and no uncorrected one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from protobench.engine.metrics import merge
from protobench.htmlreport.view import run_view, spectrum_points
from protobench.snapshots.series import TOTAL
from protobench.snapshots.store import SnapshotStore
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
    charts = set(re.findall(r'data-chart="([^"]+)"', text))
    assert {"overview-throughput", "overview-latency", "overview-spectrum"} <= charts
    assert {"op1-throughput", "op1-latency", "op1-spectrum", "res-cpu"} <= charts
    assert "uncorrected" in text
    assert '"offered/s"' in text
    assert "<span class='badge PASS'>PASS</span>" in text
    chromium = find_chromium()
    if chromium is None:
        return
    with browser(chromium) as b:
        loaded = b.load(page, 150, timeout=60 * S)
    assert loaded.errors == []
    assert [url for url in loaded.requests[1:] if not url.startswith("data:")] == []
    assert loaded.charts
    assert min(loaded.charts.values()) >= 150


def test_the_bacnet_ip_total_merges_every_operation(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Its TOTAL uncorrected curve was the object-list op's alone (issue 30)."""
    pytest.importorskip("bac_py")
    store = tmp_path / "snaps"
    ran = cli(
        "run", "bacnet-ip", "--warmup", "1s", "--duration", "3s", "--no-tui", "--quiet",
        "--snapshots-dir", str(store),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    snapshot = SnapshotStore(store).load("latest")
    sustain = snapshot.histograms["sustain"]
    assert all("hist_uncorrected" not in hists for hists in sustain.values())  # closed model
    spectra = {item.name: item for item in run_view(snapshot).spectra}
    every = merge([hists["hist"] for hists in sustain.values()])
    assert every.get_total_count() == snapshot.report.phases["sustain"].total.ok
    assert spectra[TOTAL].corrected == spectrum_points(every)
    assert all(item.uncorrected is None for item in spectra.values())
    assert spectra["object-list"].corrected == spectrum_points(
        merge([sustain["object-list"]["hist"]])
    )


def test_run_and_diff_write_their_pages(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    run_page = tmp_path / "run.html"
    ran = cli(*RUN, "--processes", "1", "--no-tui", "--quiet", "--report", str(run_page))
    assert ran.returncode == 0, ran.stderr
    assert 'data-chart="overview-throughput"' in run_page.read_text()
    again = cli(*RUN, "--processes", "1", "--no-tui", "--quiet")
    assert again.returncode == 0, again.stderr
    diff_page = tmp_path / "diff.html"
    compared = cli("diff", "latest~1", "latest", "--report", str(diff_page))
    assert compared.returncode in {0, 4}, compared.stderr
    text = diff_page.read_text()
    assert 'data-chart="cmp0-p99"' in text
    assert "<th>base: median [95% CI]</th>" in text
