"""The text and command line of ``protobench diff`` (snapshots built in memory)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from protobench.cli import app
from protobench.cli.diff_text import format_change, format_value, render_text
from protobench.snapshots.diff import compare, parse_gate
from protobench.snapshots.store import SnapshotStore
from tests.support.snapshots import OpSpec, make_snapshot, typed_snapshot

TWO_OPS = {"get": OpSpec(), "post": OpSpec(rate=500.0, median_us=4000.0)}
TWO_OPS_SLOWER = {"get": OpSpec(median_us=2000.0), "post": OpSpec(rate=500.0, median_us=4000.0)}


def test_values_and_changes_are_formatted_by_metric() -> None:
    assert format_value("throughput", 12345.0) == "12.3k/s"
    assert format_value("throughput", 950.0) == "950/s"
    assert format_value("p99", 1500.0) == "1.5ms"
    assert format_value("error_rate", 0.0125) == "1.25%"
    assert format_value("p50", None) == "-"
    assert format_change("p50", 0.1234) == "+12.34%"
    assert format_change("error_rate", 0.005) == "+0.50pp"
    assert format_change("throughput", None) == "?"


def test_text_has_a_block_per_metric_with_total_geomean_and_gates() -> None:
    diff = compare(
        [typed_snapshot(TWO_OPS, seed=1)],
        [typed_snapshot(TWO_OPS_SLOWER, seed=2)],
        metrics=("throughput", "p50"),
        gates=[parse_gate("get:p50:+10%"), parse_gate("throughput:-50%")],
    )
    text = render_text(diff)
    lines = text.splitlines()
    assert lines[0] == "base: 20250101-000000-synthetic-0000 (12 intervals)"
    assert not any(line.startswith("WARNING") for line in lines)
    p50 = lines.index(next(x for x in lines if x.startswith("p50 ")))
    block = lines[p50 : p50 + 5]
    assert [row.split()[0] for row in block] == ["p50", "get", "post", "TOTAL", "geomean"]
    get = block[1]
    assert "+100" in get
    assert "(p=0.000 n=12)" in get
    assert "~ (p=" in block[2]
    assert "gate FAILED: get:p50:+10% (get +" in text
    assert "gate passed: throughput:-50%" in text
    # Every block shares the column layout.
    assert lines[p50].index("base") == next(x for x in lines if x.startswith("throughput")).index(
        "base"
    )


def test_text_of_one_operation_has_no_total_row_and_shows_infinite_ci_for_few_samples() -> None:
    diff = compare(
        [typed_snapshot(seed=1, intervals=4)],
        [typed_snapshot(seed=2, intervals=4)],
        metrics=("p50",),
    )
    text = render_text(diff)
    assert "TOTAL" not in text
    assert "± ∞" in text
    assert "note: need >= 6 intervals per side" in text


def test_a_run_without_sustain_intervals_shows_dashes() -> None:
    diff = compare([typed_snapshot(seed=1)], [typed_snapshot(seed=2, intervals=0, partial=True)])
    text = render_text(diff)
    assert "new run 20250101-000000-synthetic-0000 is partial (interrupted)" in text
    get_line = next(x for x in text.splitlines() if x.startswith("get "))
    assert get_line.split()[4] == "-"


def _store(tmp_path: Path) -> SnapshotStore:
    store = SnapshotStore(tmp_path / "snaps")
    for index, (ops, seed) in enumerate([(TWO_OPS, 1), (TWO_OPS, 2), (TWO_OPS_SLOWER, 3)]):
        run_id = f"20250101-00000{index}-synthetic-000{index}"
        store.write(run_id, {**make_snapshot(ops, seed=seed), "id": run_id})
    return store


def test_command_line_sides_json_and_exit_codes(tmp_path: Path) -> None:
    store = _store(tmp_path)
    where = ["--snapshots-dir", str(store.directory)]
    runner = CliRunner()
    two = runner.invoke(app, ["diff", "latest~2", "latest", *where, "--fail-on", "get:p50:+10%"])
    assert two.exit_code == 1, two.output
    assert "gate FAILED" in two.output
    several = runner.invoke(
        app, ["diff", "latest~2", "latest~1", "--", "latest", *where, "--json", "-m", "p99.9"]
    )
    assert several.exit_code == 0, several.output
    assert '"metrics": [\n    "p999"\n  ]' in several.output
    assert several.output.count('"intervals": 12') == 3
    for args, message in [
        (["diff", "latest", *where], "give BASE NEW"),
        (["diff", "latest", "--", *where], "at least one run on each side"),
        (["diff", "latest", "latest~1", "-m", "p42", *where], "unknown metric 'p42'"),
        (["diff", "latest", "latest~1", "--fail-on", "p99>1", *where], "expected a gate"),
        (["diff", "latest", "latest~1", "--alpha", "2", *where], "--alpha"),
        (["diff", "latest", "nope", *where], "no snapshot 'nope'"),
    ]:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output


def test_a_gate_on_too_few_intervals_exits_4_and_says_why(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snaps")
    slower = {"get": OpSpec(median_us=3690.0)}
    for index, ops in enumerate([{"get": OpSpec()}, slower]):
        run_id = f"20250101-00000{index}-synthetic-000{index}"
        store.write(run_id, {**make_snapshot(ops, seed=index + 1, intervals=1), "id": run_id})
    args = ["diff", "latest~1", "latest", "--snapshots-dir", str(store.directory)]
    runner = CliRunner()
    result = runner.invoke(app, [*args, "--fail-on", "p50:+10%", "-m", "p50"])
    assert result.exit_code == 4, result.output
    assert "? (p=1.000 n=1: need >= 6 samples a side, have 1 + 1)" in result.output
    assert (
        "gate INCONCLUSIVE: p50:+10% (TOTAL: need >= 6 samples a side, have 1 + 1)" in result.output
    )
    accepted = runner.invoke(app, [*args, "--fail-on", "p50:+10%", "--accept-inconclusive"])
    assert accepted.exit_code == 0, accepted.output
    assert "gate INCONCLUSIVE (accepted): p50:+10%" in accepted.output
    no_gate = runner.invoke(app, args)
    assert no_gate.exit_code == 0, no_gate.output
