"""The HTML report page: the answer first, every chart, readable cells, safe data, the CLI."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

from protobench.htmlreport.page import run_page
from protobench.htmlreport.view import run_view
from protobench.snapshots.store import SnapshotStore
from tests.support.cli import run_cli
from tests.support.html_snapshot import SECRET, chart_data, report_snapshot
from tests.support.snapshots import make_snapshot, typed

HOSTILE = "protocol:</script><img src=x onerror=alert(1)>"


def _visible(page: str) -> str:
    """The text a reader sees: the page before its chart data, without its tags."""
    body = page.split("<body>", 1)[1].split('<script type="application/json"', 1)[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def test_the_page_opens_on_the_verdict_then_the_key_figures() -> None:
    page = run_page(run_view(typed(report_snapshot())))
    header = page.index("<section id='verdict'>")
    assert page.index("<h1>") < header < page.index("class='cards'") < page.index("id='overview'")
    assert "<span class='badge PASS'>PASS</span>" in page
    assert "<span class='headline'>1 threshold held</span>" in page
    assert "<span class='code'>exit code 0</span>" in page
    assert " · kernel clock (send: user) · " in page
    text = _visible(page)
    assert "✔ pass p99 < 5ms 2.1ms" in " ".join(text.split())
    for caveat in ("host saturated: host CPU at 97%", "finding: lost 3"):
        assert caveat in text


def test_a_failed_run_says_fail_and_what_failed() -> None:
    snapshot = report_snapshot()
    snapshot["report"]["thresholds"] = [{"expr": "p99 < 1ms", "value": 4780.0, "ok": False}]
    snapshot["report"]["verdicts"]["thresholds_passed"] = False
    page = run_page(run_view(typed(snapshot)))
    assert "<span class='badge FAIL'>FAIL</span>" in page
    assert "<span class='headline'>p99 &lt; 1ms failed (observed 4.78ms)</span>" in page
    assert "✘ fail p99 < 1ms 4.78ms" in " ".join(_visible(page).split())


def test_cells_hold_text_not_json_nor_python_values() -> None:
    snapshot = report_snapshot()
    snapshot["report"]["verdicts"]["findings"] = []
    snapshot["labels"] = {"ci": True, "tags": ["a", "b"]}
    text = _visible(run_page(run_view(typed(snapshot))))
    words = set(text.split())
    assert not words & {"True", "False", "None", "null", "true", "false"}
    assert "[]" not in text
    assert "{" not in text
    assert "findings" not in text
    assert "a, b" in text


def test_page_has_every_chart() -> None:
    page = run_page(run_view(typed(report_snapshot())))
    charts = {f"op{i}-{kind}" for i in range(3) for kind in ("throughput", "latency", "spectrum")}
    charts |= {"op0-errors", "op1-errors", "op0-counters", "op1-counters"}
    charts |= {f"overview-{kind}" for kind in ("throughput", "latency", "errors", "spectrum")}
    charts |= {"overview-target", "res-cpu", "res-target", "res-fds", "res-host-memory"}
    found = set(re.findall(r'<figure class="chart" data-chart="([^"]+)">', page))
    assert found == charts
    assert set(chart_data(page)["charts"]) == charts
    assert "no errors" in page  # put
    assert "<script src=" not in page
    assert "<link" not in page


def test_one_operation_has_no_separate_total_section() -> None:
    page = run_page(run_view(typed(make_snapshot())))
    found = set(re.findall(r'data-chart="([^"]+)"', page))
    assert not {name for name in found if name.startswith("op0-")}
    assert {"op1-throughput", "op1-latency", "op1-spectrum", "overview-throughput"} <= found


def test_every_series_reads_a_column_the_page_holds() -> None:
    data = chart_data(run_page(run_view(typed(report_snapshot()))))
    columns = data["columns"]
    assert isinstance(columns, dict)
    for chart in data["charts"].values():
        for series in chart["series"]:
            assert len(columns[series["x"]]) == len(columns[series["y"]]) > 0
            if series["x0"]:
                assert len(columns[series["x0"]]) == len(columns[series["x"]])


def test_the_open_models_throughput_charts_draw_the_offered_rate() -> None:
    data = chart_data(run_page(run_view(typed(report_snapshot()))))
    charts = data["charts"]
    assert isinstance(charts, dict)
    labels = [s["label"] for s in charts["overview-throughput"]["series"]]
    assert labels == ["ok/s", "errors/s", "offered/s"]
    assert charts["overview-latency"]["y"] == {
        "unit": "us",
        "label": "latency",
        "log": True,
        "zero": False,
    }
    spectrum = charts["op0-spectrum"]
    assert (spectrum["x"]["unit"], spectrum["x"]["log"]) == ("percentile", True)
    assert [s["label"] for s in spectrum["series"]] == ["corrected", "uncorrected", "our own delay"]
    assert spectrum["series"][2]["dash"]
    delay = charts["op1-latency"]["series"][-1]
    assert (delay["label"], delay["y"], delay["dash"]) == (
        "our own delay p99",
        "op1.delay_p99",
        True,
    )
    assert "our own delay" not in [s["label"] for s in charts["op2-latency"]["series"]]  # put
    target = charts["res-target"]
    assert [(s["label"], s["axis"]) for s in target["series"]] == [
        ("CPU", 1),
        ("memory (RSS)", 2),
    ]


def test_secrets_never_reach_the_page() -> None:
    page = run_page(run_view(typed(report_snapshot())))
    assert SECRET not in page
    assert "http://user:&lt;secret&gt;@127.0.0.1:8080/" in page


def test_a_servers_error_code_cannot_end_the_pages_script() -> None:
    snapshot = report_snapshot()
    for record in snapshot["series"]:
        figures = record["ops"]["get"]
        figures["errors_by_class"] = {"protocol": figures["errors"]}
        figures["error_codes"] = {HOSTILE: figures["errors"]}
    page = run_page(run_view(typed(snapshot)))
    assert "<img" not in page
    assert page.count("</script>") == 2  # the data's and the code's
    labels = [s["label"] for s in chart_data(page)["charts"]["op1-errors"]["series"]]
    assert labels == [HOSTILE]


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


def _loaded_after(imports: str) -> set[str]:
    code = f"import json, sys\n{imports}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_the_report_loads_only_when_a_page_is_written() -> None:
    loaded = _loaded_after("import protobench.cli, protobench.engine.controller")
    assert not {m for m in loaded if "htmlreport" in m}


def test_the_report_package_stays_below_the_ui_and_off_the_engines_plan() -> None:
    loaded = _loaded_after("import protobench.htmlreport.page, protobench.htmlreport.compare")
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "rich", "typer")}
    assert "protobench.tui" not in loaded
    assert "protobench.cli" not in loaded
    # the plan loads profiles and every plugin's registry: the report needs none of it
    assert "protobench.engine.plan" not in loaded


def test_a_run_none_of_whose_sessions_opened_says_why_and_draws_nothing() -> None:
    snapshot = make_snapshot()
    snapshot.update(series=[], histograms={}, resources=[], partial=True)
    report = snapshot["report"]
    report.update(phases={}, partial=True, stop_reason="no-session")
    report["notices"] = [
        {"kind": "sessions", "message": "0 of 4 sessions opened: refused (4)", "elapsed": 5.0}
    ]
    page = run_page(run_view(typed(snapshot)))
    assert "<span class='badge INCONCLUSIVE'>INCONCLUSIVE</span>" in page
    assert "nothing measured: 0 of 4 sessions opened: refused (4)" in page
    assert "<figure" not in page
    assert "no interval was measured" in page
