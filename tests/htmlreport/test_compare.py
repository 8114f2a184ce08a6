"""The comparison page: the gates' answer, every change with its significance, the overlays."""

from __future__ import annotations

import html
import re
from pathlib import Path

from protobench.cli.diff_text import render_text
from protobench.cli.report_cmd import write_diff_report
from protobench.htmlreport.compare import compare_page, direction
from protobench.htmlreport.view import run_view
from protobench.snapshots.diff import compare, parse_gate
from tests.support.html_snapshot import report_snapshot
from tests.support.snapshots import OpSpec, typed, typed_snapshot

TWO_OPS = {"get": OpSpec(), "post": OpSpec(rate=500.0, median_us=4000.0)}
SLOWER_GET = {"get": OpSpec(median_us=2000.0), "post": OpSpec(rate=500.0, median_us=4000.0)}


def _page(gates: list[str], base: dict[str, OpSpec] = TWO_OPS) -> tuple[str, object]:
    before, after = typed_snapshot(base, seed=1), typed_snapshot(SLOWER_GET, seed=2)
    diff = compare([before], [after], gates=[parse_gate(g) for g in gates])
    page = compare_page([run_view(before)], [run_view(after)], diff, render_text(diff))
    return page, diff


def _row(page: str, op: str, metric: str) -> tuple[str, str]:
    """(class, change cell) of the changes table's row."""
    found = re.search(
        rf"<tr class='(\w+)'><td>{re.escape(op)}</td><td>{re.escape(metric)}</td>"
        r"<td class='num'>[^<]*</td><td class='num'>[^<]*</td><td class='change'>([^<]*)</td>",
        page,
    )
    assert found is not None, (op, metric)
    return found.group(1), html.unescape(found.group(2))


def test_a_crossed_gate_fails_the_comparison_and_says_where() -> None:
    page, _ = _page(["get:p50:+10%", "throughput:-50%"])
    assert "<span class='badge FAIL'>FAIL</span>" in page
    assert "<span class='headline'>1 of 2 gates crossed</span>" in page
    assert "<span class='code'>exit code 1</span>" in page
    assert re.search(r"<li>✘ get:p50:\+10%: crossed \(get \+\d+\.\d+%\)</li>", page)
    assert "<li>✔ throughput:-50%: held</li>" in page


def test_every_change_is_a_row_with_its_significance() -> None:
    page, _ = _page([])
    assert "class='badge" not in page  # no gate, no verdict
    klass, change = _row(page, "get", "p50")
    assert klass == "worse"  # twice as slow
    assert re.fullmatch(r"\+\d+\.\d+% \(p=0\.000, significant\)", change)
    klass, change = _row(page, "post", "p50")
    assert klass == "same"
    assert change.startswith("~ no significant change (p=")
    assert _row(page, "TOTAL", "throughput")[0] in {"same", "better", "worse"}


def test_a_rise_in_throughput_is_better_and_in_latency_worse() -> None:
    _, diff = _page([])
    rows = {(row.op, row.metric): row for row in diff.rows}  # type: ignore[attr-defined]
    assert direction(rows["get", "p50"]) == "worse"
    faster = compare(
        [typed_snapshot(SLOWER_GET, seed=2)], [typed_snapshot(TWO_OPS, seed=1)], gates=[]
    )
    assert direction(faster.row("get", "p50")) == "better"


def test_runs_are_overlaid_per_operation_with_the_change_in_each_title() -> None:
    page, _ = _page([])
    for index in range(3):  # TOTAL, get, post
        for kind in ("throughput", "p50", "p99", "spectrum"):
            assert f'data-chart="cmp{index}-{kind}"' in page
    title = re.search(r"<figcaption>get: p50 · ([^<]*)</figcaption>", page)
    assert title is not None
    assert html.unescape(title.group(1)).endswith("significant)")


def test_one_operation_is_compared_without_a_total() -> None:
    one = {"get": OpSpec()}
    before, after = typed_snapshot(one, seed=1), typed_snapshot(one, seed=2)
    diff = compare([before], [after], gates=[])
    page = compare_page([run_view(before)], [run_view(after)], diff, render_text(diff))
    assert "<td>TOTAL</td>" not in page
    assert 'data-chart="cmp0-p99"' in page
    assert 'data-chart="cmp1-p99"' not in page


def test_write_diff_report_carries_diffs_text(tmp_path: Path) -> None:
    base, new = typed_snapshot(TWO_OPS, seed=1), typed_snapshot(SLOWER_GET, seed=2)
    diff = compare([base], [new], metrics=("throughput", "p99"), gates=[])
    out = tmp_path / "cmp.html"
    write_diff_report([base], [new], diff, out)
    page = out.read_text()
    assert html.escape(render_text(diff)) in page
    assert "<th>base: median [95% CI]</th>" in page


def test_the_generators_delay_is_compared_in_its_unit() -> None:
    before, after = typed(report_snapshot()), typed(report_snapshot())
    diff = compare([before], [after], gates=[])
    page = compare_page([run_view(before)], [run_view(after)], diff, render_text(diff))
    found = re.search(r"<td>get</td><td>gen\. delay p99</td><td class='num'>([^<]*)</td>", page)
    assert found is not None
    assert re.fullmatch(r"\d+µs \[\d+µs, \d+µs\]", html.unescape(found.group(1)))
