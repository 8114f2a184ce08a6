"""The comparison of runs, on snapshots built from known distributions."""

from __future__ import annotations

import json

import orjson
import pytest

from protobench.engine.metrics import merge
from protobench.engine.report_model import ReportError
from protobench.snapshots.diff import (
    UndecidedRow,
    compare,
    metric_name,
    parse_gate,
    percentile_samples,
)
from protobench.snapshots.series import TOTAL
from protobench.snapshots.stats import estimate, geomean
from protobench.vocab.exceptions import ExitCode
from tests.support.snapshots import OpSpec, make_snapshot, typed, typed_snapshot

SLOWER = {"get": OpSpec(median_us=1500.0)}


def test_same_distribution_shows_no_significant_throughput_or_p50_change() -> None:
    diff = compare([typed_snapshot(seed=1)], [typed_snapshot(seed=2)])
    for metric in ("throughput", "p50"):
        row = diff.row("get", metric)
        assert not row.significant
        assert row.p_value is not None
        assert row.p_value >= 0.05
        assert row.base is not None
        assert row.base.n == 12
    assert diff.warnings == []
    assert diff.exit_code == 0


def test_slower_latency_is_significant_and_trips_the_gate() -> None:
    gates = [parse_gate("p50:+10%"), parse_gate("p50:+80%"), parse_gate("throughput:-5%")]
    diff = compare([typed_snapshot(seed=1)], [typed_snapshot(SLOWER, seed=3)], gates=gates)
    row = diff.row(TOTAL, "p50")
    assert row.significant
    assert row.p_value is not None
    assert row.p_value < 0.001
    assert row.change == pytest.approx(0.5, abs=0.05)
    assert row.phase.change == pytest.approx(0.5, abs=0.05)
    assert [g.expr for g in diff.gates if g.failed] == ["p50:+10%"]
    assert diff.exit_code == 1


def test_each_side_is_the_median_and_ci_of_its_interval_samples() -> None:
    snapshot = typed_snapshot(seed=1)
    diff = compare([snapshot], [typed_snapshot(seed=2)])
    sustain = [r for r in snapshot.series if r.phase == "sustain"]
    p99s = [r.ops["get"].latency_us.p99 or 0.0 for r in sustain]
    throughputs = [r.ops["get"].throughput for r in sustain]
    assert diff.row("get", "p99").base == estimate(p99s)
    assert diff.row("get", "throughput").base == estimate(throughputs)


def test_whole_phase_figures_come_from_the_merged_histograms_and_counts() -> None:
    base = typed_snapshot(seed=1)
    diff = compare([base], [typed_snapshot(seed=2)])
    sustain = base.report.sustain
    assert sustain is not None
    report = sustain.ops["get"]
    for metric in ("p50", "p90", "p99", "p999"):
        assert diff.row("get", metric).phase.base == report.latency_us.value(metric)
    assert diff.row("get", "throughput").phase.base == pytest.approx(report.throughput)
    assert diff.row("get", "error_rate").phase.base == 0.0


def test_several_runs_per_side_pool_their_intervals_and_histograms() -> None:
    base = [typed_snapshot(seed=s) for s in (1, 2)]
    new = [typed_snapshot(seed=s) for s in (3, 4, 5)]
    diff = compare(base, new)
    row = diff.row("get", "p99")
    assert row.base is not None
    assert row.base.n == 24
    assert row.new is not None
    assert row.new.n == 36
    merged = merge([s.histograms["sustain"]["get"]["hist"] for s in base])
    assert row.phase.base == merged.get_value_at_percentile(99.0)
    ok = sum(s.report.phases["sustain"].total.ok for s in new)
    seconds = sum(s.report.phases["sustain"].duration_s for s in new)
    assert diff.row(TOTAL, "throughput").phase.new == pytest.approx(ok / seconds)
    assert [run.intervals for run in diff.new] == [12, 12, 12]


def test_a_short_last_interval_is_left_out_of_the_samples() -> None:
    short = typed_snapshot(seed=1, last_interval_fraction=0.2)
    diff = compare([short], [typed_snapshot(seed=2)])
    assert diff.base[0].intervals == 11
    assert diff.row("get", "throughput").base.n == 11  # type: ignore[union-attr]


def test_error_rate_changes_are_in_points() -> None:
    failing = {"get": OpSpec(error_rate=0.05)}
    diff = compare(
        [typed_snapshot(seed=1)],
        [typed_snapshot(failing, seed=2)],
        gates=[parse_gate("error_rate:+1%"), parse_gate("error_rate:+10pp")],
    )
    row = diff.row("get", "error_rate")
    assert row.significant
    assert row.change == pytest.approx(0.05, abs=0.015)
    assert row.phase.change == pytest.approx(0.05, abs=0.01)
    assert [g.expr for g in diff.gates if g.failed] == ["error_rate:+1%"]


def test_geomean_row_summarises_the_operations() -> None:
    ops = {"get": OpSpec(median_us=1000.0), "post": OpSpec(median_us=4000.0, rate=500.0)}
    slower = {"get": OpSpec(median_us=2000.0), "post": OpSpec(median_us=4000.0, rate=500.0)}
    diff = compare([typed_snapshot(ops, seed=1)], [typed_snapshot(slower, seed=2)])
    by_metric = {g.metric: g for g in diff.geomean}
    assert "error_rate" not in by_metric
    p50 = by_metric["p50"]
    base = [diff.row(op, "p50").base.median for op in ("get", "post")]  # type: ignore[union-attr]
    assert p50.base == pytest.approx(geomean(base))
    assert p50.change == pytest.approx(2**0.5 - 1, abs=0.05)
    assert p50.ops == 2
    assert (
        diff.row("post", "p50").significant is False
        or abs(diff.row("post", "p50").change or 0) < 0.05
    )


def test_single_operation_has_no_geomean() -> None:
    assert compare([typed_snapshot(seed=1)], [typed_snapshot(seed=2)]).geomean == []


def test_runs_that_are_not_comparable_are_named() -> None:
    base = typed_snapshot(seed=1)
    new = typed_snapshot(
        seed=2,
        host="other-host",
        cpu_model="Other CPU",
        profile_sha256="b" * 64,
        overrides={"serve": {"delay": 0.005}},
        tool_version="0.2.0",
        partial=True,
        generator_bound=True,
    )
    warnings = compare([base], [new]).warnings
    text = "\n".join(warnings)
    assert "other host: base bench-host, new other-host" in text
    assert "other CPU: base Test CPU x2, new Other CPU x2" in text
    assert "other profile hash: base aaaaaaaaaaaa, new bbbbbbbbbbbb" in text
    assert 'other serve override: base (not given), new {"delay": 0.005}' in text
    assert "other tool version: base 0.1.0, new 0.2.0" in text
    assert f"new run {new.id} was generator-bound" in text
    assert f"new run {new.id} is partial (interrupted)" in text
    assert len(warnings) == 7


def test_operations_on_one_side_only_are_reported_and_gates_on_them_cannot_decide() -> None:
    both = {"get": OpSpec(), "post": OpSpec()}
    gates = [parse_gate("post:p50:+1%"), parse_gate("p50:+1%"), parse_gate("get:p50:+1%")]
    diff = compare([typed_snapshot(both, seed=1)], [typed_snapshot(seed=2)], gates=gates)
    assert diff.ops == ["get"]
    assert "operation 'post' is only in the base runs" in diff.warnings
    on_post, on_total, on_get = diff.gates
    assert on_post.status == "inconclusive"
    assert on_post.inconclusive == [
        UndecidedRow(op="post", reason="operation 'post' is only in the base runs")
    ]
    # TOTAL mixes other operations on each side: no gate can decide on it
    assert on_total.status == "inconclusive"
    assert on_total.inconclusive == [
        UndecidedRow(op=TOTAL, reason="the runs do not have the same operations")
    ]
    assert on_get.status == "passed"
    assert diff.exit_code == ExitCode.INCONCLUSIVE
    with pytest.raises(ValueError, match="no operation 'put'"):
        compare(
            [typed_snapshot(both, seed=1)],
            [typed_snapshot(seed=2)],
            gates=[parse_gate("put:p50:+1%")],
        )


def test_a_gate_with_one_interval_a_side_is_inconclusive_not_passed() -> None:
    # The reported case: p50 +269% with one interval a side (n=1, p=1.0) passed its gate.
    slower = {"get": OpSpec(median_us=3690.0)}
    base = typed_snapshot(seed=1, intervals=1)
    new = typed_snapshot(slower, seed=2, intervals=1)
    diff = compare([base], [new], gates=[parse_gate("p50:+10%")])
    row = diff.row(TOTAL, "p50")
    assert row.p_value == 1.0
    assert row.inconclusive == "need >= 6 samples a side, have 1 + 1"
    assert [g for g in diff.gates if g.status == "failed"] == []
    assert [g.expr for g in diff.gates if g.status == "inconclusive"] == ["p50:+10%"]
    assert diff.exit_code == ExitCode.INCONCLUSIVE == 4
    data = diff.to_dict()
    assert data["gates"][0]["status"] == "inconclusive"
    assert data["exit_code"] == 4
    accepted = compare([base], [new], gates=[parse_gate("p50:+10%")], accept_inconclusive=True)
    assert accepted.exit_code == 0
    assert accepted.gates[0].status == "inconclusive"


def test_five_intervals_a_side_still_cannot_decide_six_can() -> None:
    slower = {"get": OpSpec(median_us=3000.0)}
    five = compare(
        [typed_snapshot(seed=1, intervals=5)],
        [typed_snapshot(slower, seed=2, intervals=5)],
        gates=[parse_gate("p50:+10%")],
    )
    assert five.row(TOTAL, "p50").significant  # p = 2/252: significant, yet too few for a CI
    assert five.exit_code == ExitCode.INCONCLUSIVE
    six = compare(
        [typed_snapshot(seed=1, intervals=6)],
        [typed_snapshot(slower, seed=2, intervals=6)],
        gates=[parse_gate("p50:+10%")],
    )
    assert six.row(TOTAL, "p50").inconclusive is None
    assert six.exit_code == 1


def test_a_small_alpha_needs_more_samples() -> None:
    diff = compare(
        [typed_snapshot(seed=1, intervals=6)],
        [typed_snapshot(seed=2, intervals=6)],
        alpha=0.001,
        gates=[parse_gate("p50:+10%")],
    )
    reason = diff.row(TOTAL, "p50").inconclusive
    assert reason == "no change can be significant at alpha=0.001 with 6 + 6 samples"
    assert diff.exit_code == ExitCode.INCONCLUSIVE


def test_runs_of_other_protocols_cannot_pass_a_gate() -> None:
    other = make_snapshot(seed=2)
    other["report"]["protocol"] = "websocket"
    diff = compare([typed_snapshot(seed=1)], [typed(other)], gates=[parse_gate("*:p50:+10%")])
    assert "other protocol: base http, new websocket" in diff.warnings
    assert diff.gates[0].status == "inconclusive"
    assert diff.exit_code == ExitCode.INCONCLUSIVE


def test_a_whole_phase_percentile_needs_enough_samples_to_differ_from_the_max() -> None:
    # 50 ops/s x 12 x 0.25 s = ~150 samples a side: enough for p99 (100), not for p99.9 (1,000)
    sparse = {"get": OpSpec(rate=50.0)}
    diff = compare([typed_snapshot(sparse, seed=1)], [typed_snapshot(sparse, seed=2)])
    p99, p999 = diff.row("get", "p99"), diff.row("get", "p999")
    assert p99.phase.change is not None
    assert p99.phase.note is None
    assert p999.phase.change is None
    assert p999.phase.base is not None
    assert p999.phase.note is not None
    assert p999.phase.note.startswith("need >= 1,000 samples, have ")
    assert percentile_samples("p50") == 2
    assert percentile_samples("p90") == 10
    assert percentile_samples("p99") == 100
    assert percentile_samples("p999") == 1000


def test_few_intervals_are_noted() -> None:
    few = compare([typed_snapshot(seed=1, intervals=3)], [typed_snapshot(seed=2, intervals=3)])
    assert any("need >= 6 intervals" in note for note in few.notes)
    assert any("no change can be significant" in note for note in few.notes)
    row = few.row("get", "p50")
    assert row.base is not None
    assert row.base.ci_low is None


@pytest.mark.parametrize(
    ("expr", "op", "metric", "direction", "limit"),
    [
        ("p99:+10%", TOTAL, "p99", 1, 0.10),
        ("throughput:-5%", TOTAL, "throughput", -1, 0.05),
        ("get:p50:+20%", "get", "p50", 1, 0.20),
        ("*:p99.9:+0%", "*", "p999", 1, 0.0),
        (" error_rate : +0.5pp ", TOTAL, "error_rate", 1, 0.005),
    ],
)
def test_gate_parsing(expr: str, op: str, metric: str, direction: int, limit: float) -> None:
    gate = parse_gate(expr)
    assert (gate.op, gate.metric, gate.direction) == (op, metric, direction)
    assert gate.limit == pytest.approx(limit)


@pytest.mark.parametrize("expr", ["p99:10%", "p99>10%", "p99:+10", "latency:+10%", ""])
def test_bad_gates_say_what_was_expected(expr: str) -> None:
    with pytest.raises(ValueError, match=r"expected|unknown metric"):
        parse_gate(expr)


def test_a_wildcard_gate_checks_every_row() -> None:
    ops = {"get": OpSpec(), "post": OpSpec()}
    slower = {"get": OpSpec(), "post": OpSpec(median_us=1500.0)}
    diff = compare(
        [typed_snapshot(ops, seed=1)],
        [typed_snapshot(slower, seed=2)],
        gates=[parse_gate("*:p50:+10%")],
    )
    (result,) = diff.gates
    assert {row.op for row in result.crossed} == {"post", TOTAL}


def test_metric_names_and_json_output() -> None:
    assert metric_name("p99.9") == "p999"
    with pytest.raises(ValueError, match="unknown metric"):
        metric_name("p42")
    diff = compare(
        [typed_snapshot(seed=1)],
        [typed_snapshot(SLOWER, seed=3)],
        metrics=("throughput", "p50"),
        gates=[parse_gate("p99:+10%")],
    )
    data = json.loads(json.dumps(diff.to_dict()))
    p99 = compare([typed_snapshot(seed=1)], [typed_snapshot(SLOWER, seed=3)], metrics=("p99",))
    assert data["schema"] == "protobench.diff/1"
    assert {(r["op"], r["metric"]) for r in data["rows"]} == {
        ("get", "throughput"),
        ("get", "p50"),
        (TOTAL, "throughput"),
        (TOTAL, "p50"),
    }
    assert data["gates"] == [
        {
            "expr": "p99:+10%",
            "status": "failed",
            "failed": True,
            "crossed": [{"op": TOTAL, "change": p99.row(TOTAL, "p99").change}],
            "inconclusive": [],
        }
    ]
    assert data["exit_code"] == 1
    p50 = next(r for r in data["rows"] if r["op"] == "get" and r["metric"] == "p50")
    assert set(p50) >= {"base", "new", "change", "change_kind", "p_value", "significant", "phase"}
    assert p50["inconclusive"] is None
    assert set(p50["base"]) == {"median", "ci_low", "ci_high", "n"}


def test_the_typed_result_is_the_json() -> None:
    # diff --json's schema is generated from Diff: orjson must give the same JSON.
    diff = compare(
        [typed_snapshot({"get": OpSpec(), "put": OpSpec()}, seed=1)],
        [typed_snapshot({"get": OpSpec(), "del": OpSpec()}, seed=3, partial=True)],
        metrics=("p50", "error_rate"),
        gates=[parse_gate("p50:+10%"), parse_gate("del:p99:+1%")],
    )
    assert orjson.loads(orjson.dumps(diff)) == json.loads(json.dumps(diff.to_dict()))
    assert [g.status for g in diff.gates] == ["inconclusive", "inconclusive"]
    # the gate on p99 decided on its rows; only the chosen metrics' rows are shown
    assert {row.metric for row in diff.rows} == {"p50", "error_rate"}


def test_a_report_that_does_not_load_is_named_by_its_field() -> None:
    bad = make_snapshot()
    bad["report"]["verdicts"]["generator_bound"] = "yes"
    with pytest.raises(ReportError, match=r"^report\.verdicts\.generator_bound"):
        typed(bad)


def test_p95_is_compared_like_the_other_percentiles() -> None:
    # Snapshots written before p95 was in the report: read from each interval's histogram.
    base = typed_snapshot(seed=1)
    diff = compare([base], [typed_snapshot(SLOWER, seed=3)], gates=[parse_gate("p95:+20%")])
    row = diff.row("get", "p95")
    assert row.base is not None
    assert row.base.n == 12
    merged = merge([base.histograms["sustain"]["get"]["hist"]])
    assert row.phase.base == merged.get_value_at_percentile(95.0)
    assert row.significant
    assert [g.expr for g in diff.gates if g.failed] == ["p95:+20%"]
    assert metric_name("p95") == "p95"


def test_total_mixes_no_latency_kinds() -> None:
    """An MQTT fan-out: the publishers' latency is a local write, the subscribers' end to end;
    the TOTAL row has no latency (as in the report), each op keeps its own, throughput adds."""
    fanout = {
        "publish": OpSpec(rate=5000.0, median_us=5.0, kind="local_write"),
        "subscribe": OpSpec(rate=5000.0, median_us=1500.0, kind="one_way"),
    }
    slower = {**fanout, "subscribe": OpSpec(rate=5000.0, median_us=3400.0, kind="one_way")}
    diff = compare([typed_snapshot(fanout, seed=1)], [typed_snapshot(slower, seed=2)])
    for metric in ("p50", "p99"):
        total = diff.row(TOTAL, metric)
        assert total.base is None
        assert total.new is None
        assert total.phase.base is None
        assert total.phase.new is None
    assert diff.row("subscribe", "p50").significant
    assert diff.row("publish", "p50").base is not None
    assert diff.row(TOTAL, "throughput").base is not None
    # one kind: the total has its latency
    same = {name: OpSpec(rate=spec.rate, median_us=spec.median_us) for name, spec in fanout.items()}
    assert (
        compare([typed_snapshot(same)], [typed_snapshot(same, seed=2)]).row(TOTAL, "p50").base
        is not None
    )
