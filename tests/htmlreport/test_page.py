"""The HTML report: what the view reads from a snapshot, what the page holds, the CLI."""

from __future__ import annotations

import gzip
import html
import json
import subprocess
import sys
from pathlib import Path

import pytest

from protobench.cli.diff_text import render_text
from protobench.cli.report_cmd import write_diff_report
from protobench.engine.metrics import merge
from protobench.htmlreport.compare import compare_page
from protobench.htmlreport.page import run_page
from protobench.htmlreport.view import Mark, run_view, spectrum_points
from protobench.snapshots.diff import compare
from protobench.snapshots.series import TOTAL
from protobench.snapshots.store import SnapshotStore
from tests.support.cli import run_cli
from tests.support.html_snapshot import NEW_COUNTERS, SECRET, report_snapshot
from tests.support.snapshots import typed


def test_marks_pauses_rate_changes_and_notices() -> None:
    view = run_view(typed(report_snapshot()))
    assert Mark("phase", 0.0, 0.5, "warmup") in view.marks
    assert Mark("pause", 1.0, 1.5, "paused") in view.marks
    assert Mark("rate", 2.0, None, "rate set to 5000/s") in view.marks
    assert Mark("notice", 2.5, None, "worker 1 exited with code 1") in view.marks


def test_counters_errors_and_verdicts_unknown_to_the_report_are_shown() -> None:
    view = run_view(typed(report_snapshot()))
    ops = {op.name: op for op in view.ops}
    assert [op.name for op in view.ops] == [TOTAL, "get", "put"]
    assert set(ops["get"].counters) == set(NEW_COUNTERS)
    # 2500 per 0.25 s interval
    assert ops["get"].counters["down_us"][-1] == pytest.approx(10_000.0)
    assert ops[TOTAL].counters["connect_failed"][-1] == pytest.approx(4.0)
    assert set(ops["get"].errors) == {"timeout", "timeout:slow"}
    assert ops["put"].errors == {}
    verdicts = dict(view.verdicts)
    assert verdicts["host_saturated"] == "True"
    assert "host CPU at 97%" in verdicts["findings"]
    assert view.thresholds == [{"expr": "p99 < 5ms", "value": "2100", "ok": "True"}]


def test_series_follow_the_intervals() -> None:
    snapshot = report_snapshot()
    view = run_view(typed(snapshot))
    get = next(op for op in view.ops if op.name == "get")
    records = snapshot["series"]
    assert len(get.t) == len(records)
    assert get.t == [r["elapsed"] for r in records]
    first = records[0]["ops"]["get"]
    assert get.ok_rate[0] == pytest.approx(first["ok"] / records[0]["duration"])
    assert get.latency["p99"][0] == first["latency_us"]["p99"]


def test_spectrum_from_the_merged_phase_histograms() -> None:
    snapshot = report_snapshot()
    view = run_view(typed(snapshot))
    hists = snapshot["histograms"]["sustain"]
    total = merge([hists["get"]["hist"], hists["put"]["hist"]])
    spectrum = view.spectra[0]
    assert spectrum.name == TOTAL
    assert spectrum.corrected == spectrum_points(total)
    assert spectrum.corrected[0][0] == 0.0
    assert spectrum.corrected[-1][0] == pytest.approx(99.999)
    assert spectrum.corrected[-1][1] == total.get_value_at_percentile(99.999)
    assert spectrum.uncorrected is not None


def test_closed_model_has_no_uncorrected_spectrum() -> None:
    snapshot = report_snapshot()
    for item in snapshot["histograms"]["sustain"].values():
        del item["hist_uncorrected"]
    assert all(s.uncorrected is None for s in run_view(typed(snapshot)).spectra)


def test_resources_per_worker_target_and_host() -> None:
    res = run_view(typed(report_snapshot())).resources
    assert list(res.worker_cpu) == ["worker pid 101", "worker pid 102"]
    assert res.worker_cpu["worker pid 101"][2] == 42.0
    assert set(res.target) == {"cpu", "rss", "fds"}
    assert set(res.host) == {"cpu", "mem_used"}


def test_secrets_never_reach_the_page() -> None:
    page = run_page(run_view(typed(report_snapshot())))
    assert SECRET not in page
    assert "http://user:&lt;secret&gt;@127.0.0.1:8080/" in page


def test_page_has_every_chart_and_the_tables() -> None:
    page = run_page(run_view(typed(report_snapshot())))
    charts = {
        f"op{i}-{kind}" for i in range(3) for kind in ("throughput", "latency", "spectrum")
    } | {"op0-errors", "op1-errors", "op0-counters", "op1-counters"}
    charts |= {"res-cpu", "res-memory", "res-fds"}
    for name in charts:
        assert f'data-chart="{name}"' in page
    assert page.count('class="chart"') == len(charts)
    assert "{{chart" not in page
    assert "no errors" in page  # put
    for text in ("host_saturated", "p99 &lt; 5ms", "rate set to 5000/s", "bench-host"):
        assert text in page
    assert "<script src=" not in page
    assert "<link" not in page


def test_report_command_writes_the_page(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snaps")
    snapshot = report_snapshot()
    store.write(snapshot["id"], snapshot)
    out = tmp_path / "r.html"
    done = run_cli(
        ["report", "latest", "-o", str(out), "--snapshots-dir", str(store.directory)], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert f"wrote {out}" in done.stderr


def test_report_command_on_a_report_that_does_not_load(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snaps")
    snapshot = report_snapshot()
    snapshot["report"]["phases"]["sustain"]["total"]["ok"] = "many"
    store.write(snapshot["id"], snapshot)
    out = tmp_path / "r.html"
    done = run_cli(
        ["report", "latest", "-o", str(out), "--snapshots-dir", str(store.directory)], tmp_path
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("protobench: error: ")
    assert line.endswith("report.phases.sustain.total.ok: expected a whole number")
    assert not out.exists()


def test_report_command_bad_reference(tmp_path: Path) -> None:
    done = run_cli(["report", "nope", "--snapshots-dir", str(tmp_path)], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"protobench: error: no snapshot 'nope' in {tmp_path}"


def test_report_without_the_extra_says_what_to_install(tmp_path: Path) -> None:
    path = tmp_path / "s.json.gz"
    with gzip.open(path, "wt") as out:
        json.dump(report_snapshot(), out)
    code = (
        "import sys; sys.modules['bokeh'] = None\n"
        "from protobench.cli import main\n"
        f"sys.argv = ['protobench', 'report', {str(path)!r}]\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "protobench: error: the HTML report needs `pip install 'protobench[report]'`\n"
    )


def test_comparison_page_overlays_runs_under_the_diff_table() -> None:
    base, new = run_view(typed(report_snapshot())), run_view(typed(report_snapshot()))
    page = compare_page([base], [new], "p99  base  new\nget  1ms  2ms  ~ (p=0.5 n=12)")
    assert "~ (p=0.5 n=12)" in page
    for index in range(3):
        for kind in ("throughput", "p50", "p99", "spectrum"):
            assert f'data-chart="cmp{index}-{kind}"' in page
    assert f"base {base.id}" in page


def test_write_diff_report_carries_diffs_table(tmp_path: Path) -> None:
    base, new = typed(report_snapshot()), typed(report_snapshot())
    diff = compare([base], [new], metrics=("throughput", "p99"), alpha=0.05, gates=[])
    out = tmp_path / "cmp.html"
    write_diff_report([base], [new], diff, out)
    page = out.read_text()
    assert html.escape(render_text(diff)) in page
    assert "~ (p=" in page


def _loaded_after(imports: str) -> set[str]:
    code = f"import json, sys\n{imports}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_bokeh_loads_only_when_a_page_is_written() -> None:
    loaded = _loaded_after("import protobench.cli, protobench.engine.controller")
    assert not {m for m in loaded if m.split(".")[0] == "bokeh" or "htmlreport" in m}


def test_the_report_package_stays_below_the_ui() -> None:
    loaded = _loaded_after("import protobench.htmlreport.page, protobench.htmlreport.compare")
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "rich", "typer")}
    assert "protobench.tui" not in loaded
    assert "protobench.cli" not in loaded


def test_an_op_that_never_succeeded_has_notes_not_empty_charts() -> None:
    snapshot = report_snapshot()
    for record in snapshot["series"]:
        figures = record["ops"]["put"]
        figures["errors"] += figures["ok"]
        figures["ok"] = 0
    for phase in snapshot["histograms"].values():
        phase.pop("put", None)
    page = run_page(run_view(typed(snapshot)))
    assert 'data-chart="op2-throughput"' in page
    assert 'data-chart="op2-latency"' not in page
    assert 'data-chart="op2-spectrum"' not in page
    assert "no successful operation; no latency recorded in sustain" in page
