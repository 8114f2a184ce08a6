"""The report's answer: the outcome is the run's exit code, checks read in their units."""

from __future__ import annotations

from typing import Any

from protobench.engine.metrics import decode, summary
from protobench.htmlreport.verdict import cards, verdict
from tests.support.html_snapshot import DELAY, report_snapshot
from tests.support.snapshots import typed

CHECKS = [
    {"expr": "ok[get] > 0", "value": 7116.0, "ok": True, "op": "get", "observed": "7116"},
    {
        "expr": "error_rate[get] < 0.50%",
        "value": 0.0435,
        "ok": False,
        "op": "get",
        "observed": "4.35%",
        "reason": "324 of 7440 attempts failed",
    },
]


def _report(**verdicts: Any) -> Any:
    snapshot = report_snapshot()
    snapshot["report"]["verdicts"].update(verdicts)
    return typed(snapshot).report


def test_a_run_that_held_passes_and_counts_what_held() -> None:
    answer = verdict(_report(checks=CHECKS[:1]))
    assert (answer.outcome, answer.exit_code) == ("PASS", 0)
    assert answer.headline == "1 threshold and 1 built-in check: all held"
    first, second = answer.rows
    assert (first.kind, first.expr, first.observed, first.scope) == (
        "threshold",
        "p99 < 5ms",
        "2.1ms",
        "all operations",
    )
    assert (second.kind, second.observed, second.scope) == ("check", "7,116", "get")
    assert answer.caveats == ["host saturated: host CPU at 97%", "finding: lost 3"]


def test_a_failed_threshold_fails_and_names_it_with_what_was_observed() -> None:
    snapshot = report_snapshot()
    snapshot["report"]["thresholds"] = [
        {"expr": "p99 < 1ms", "value": 4780.0, "ok": False},
        {"expr": "throughput > 100/s", "value": 2372.0, "ok": True},
    ]
    snapshot["report"]["verdicts"]["thresholds_passed"] = False
    answer = verdict(typed(snapshot).report)
    assert (answer.outcome, answer.exit_code) == ("FAIL", 1)
    assert answer.headline == "p99 < 1ms failed (observed 4.78ms)"
    assert [row.observed for row in answer.rows] == ["4.78ms", "2,372.0/s"]


def test_a_failed_check_fails_with_its_reason() -> None:
    answer = verdict(_report(checks=CHECKS, checks_passed=False))
    assert answer.outcome == "FAIL"
    assert answer.headline == "error_rate[get] < 0.50% failed (observed 4.35%)"
    failed = answer.rows[-1]
    assert (failed.ok, failed.note) == (False, "324 of 7440 attempts failed")


def test_a_partial_run_or_one_that_measured_nothing_is_inconclusive() -> None:
    snapshot = report_snapshot()
    snapshot["report"].update(partial=True, stop_reason="interrupted")
    answer = verdict(typed(snapshot).report)
    assert (answer.outcome, answer.exit_code) == ("INCONCLUSIVE", 3)
    assert answer.headline == "partial run (interrupted): its figures are not a whole run's"
    nothing = verdict(_report(complete=False, incomplete_reason="no exchange completed"))
    assert nothing.outcome == "INCONCLUSIVE"
    assert nothing.headline == "nothing measured: no exchange completed"


def test_a_generator_bound_run_passes_with_the_caveat() -> None:
    answer = verdict(_report(generator_bound=True, reason="a worker used 100% of a core"))
    assert answer.outcome == "PASS"
    assert answer.caveats[0] == "generator-bound: a worker used 100% of a core"


def test_key_figures_in_their_units() -> None:
    report = typed(report_snapshot()).report
    total = report.phases["sustain"].total
    shown = {card.label: card for card in cards(report, offered=2000.0)}
    assert list(shown) == [
        "throughput",
        "error rate",
        "p50",
        "p99",
        "our own delay p99",
        "generator CPU",
        "target CPU",
    ]
    delay = summary(decode(DELAY))  # 40 to 399 µs, one each
    assert shown["our own delay p99"].value == f"{delay['p99']:.0f}µs"
    assert shown["our own delay p99"].detail == (
        f"p50 {delay['p50']:.0f}µs · kernel receive stamp to the engine, not in the latency"
    )
    assert shown["throughput"].value == f"{total.throughput:,.1f}/s"
    assert shown["throughput"].detail == f"of 2,000.0/s offered ({total.throughput / 2000:.0%})"
    assert shown["error rate"].value == f"{total.error_rate:.2%}"
    assert shown["error rate"].tone == "bad"
    assert shown["p99"].value.endswith("ms")
    assert shown["p99"].detail.startswith("p99.9 ")
    assert shown["generator CPU"].value == "40%"
    assert shown["target CPU"].detail == "mean of one core · peak 30%"


def test_latencies_of_different_kinds_get_a_card_each() -> None:
    snapshot = report_snapshot()
    total = snapshot["report"]["phases"]["sustain"]["total"]
    by_kind = {"round_trip": total["latency_us"], "delivery": total["latency_us"]}
    total.update(latency_kind="mixed", latency_us={}, latency_by_kind=by_kind)
    labels = [card.label for card in cards(typed(snapshot).report)]
    assert labels[2:6] == [
        "p50 · round trip",
        "p99 · round trip",
        "p50 · delivery",
        "p99 · delivery",
    ]
