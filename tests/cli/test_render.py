"""The human summary: absent figures as absent, thresholds in their units, failing ops marked,
each op's latency kind, down time, the verdicts' reasons."""

from __future__ import annotations

from dataclasses import replace

import pytest

from protobench.cli.diff_text import format_value
from protobench.cli.render import describe_model, summary_table
from protobench.engine.report_model import (
    NO_SESSION,
    NO_SESSION_NOTICE,
    ClockReport,
    LoadModel,
    NoticeEntry,
    ReportError,
    load_report,
    to_plain,
)
from protobench.vocab.units import plain_number
from tests.support.report_frames import frame, plan_of, report_of


def test_a_run_stopped_before_sustain_prints_no_none() -> None:
    report = report_of(
        plan_of({"get": 2}, ("p99 < 5ms",)),
        [frame("warmup", 0, 0.0, 0.5, {"get": {"ok": 3}})],
        stop_reason="interrupted",
    )
    text = summary_table(report)
    assert "None" not in text
    assert "no sustain phase was measured" in text
    assert "threshold FAIL: p99 < 5ms (observed absent)" in text
    assert "generator cpu peak - rss -" in text
    assert "PARTIAL RUN (interrupted)" in text


def test_threshold_values_are_printed_with_their_units() -> None:
    report = report_of(
        plan_of({"get": 2}, ("p99 < 5ms", "error_rate < 0.5%", "throughput > 10/s")),
        [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 10, "latency_ns": 6_007_000}})],
    )
    text = summary_table(report)
    assert "threshold FAIL: p99 < 5ms (observed 6.01ms)" in text
    assert "threshold PASS: error_rate < 0.5% (observed 0.00%)" in text
    assert "threshold PASS: throughput > 10/s (observed 10.0/s)" not in text  # 10 is not > 10
    assert "threshold FAIL: throughput > 10/s (observed 10.0/s)" in text


def test_the_failing_op_is_marked_and_each_op_says_what_its_latency_measures() -> None:
    counters = {"down_us": 1_500_000, "connect_failed": 7}
    report = report_of(
        plan_of({"read": 2, "write": 1}, ("error_rate < 0.5%",)),
        [
            frame(
                "sustain",
                0,
                0.0,
                1.0,
                {"read": {"ok": 5000, "counters": counters}, "write": {"errors": 3}},
            )
        ],
        kinds={"read": "round_trip", "write": "to_ack"},
    )
    lines = summary_table(report).splitlines()
    write = next(line for line in lines if line.startswith("write"))
    assert write.startswith("write !")
    assert write.endswith("to_ack")
    total = next(line for line in lines if line.startswith("TOTAL"))
    assert total.endswith("mixed")
    assert "   -  " in total  # no merged latency across kinds
    assert any(line.strip().startswith("down: 1.5 session-s (50.00% of sustain)") for line in lines)
    check = "check FAIL: ok[write] > 0 (op write never succeeded"
    assert any(line.startswith(check) for line in lines)


def test_an_open_model_without_its_rate_is_described_not_crashed() -> None:
    """A snapshot edited by hand (or by a bug) may lose the open model's rate."""
    assert describe_model(LoadModel(type="open", sessions=4)) == (
        "open model, an unknown rate over 4 sessions"
    )
    assert describe_model(LoadModel(type="open", sessions=4, rate=2000.0, ramp_to=5000.0)) == (
        "open model, 2,000/s -> 5,000/s over 4 sessions"
    )


def test_a_report_whose_model_is_neither_open_nor_closed_does_not_load() -> None:
    plain = to_plain(
        report_of(plan_of({"get": 1}), [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 5}})])
    )
    plain["model"]["type"] = "sideways"
    with pytest.raises(ReportError, match=r"model\.type"):
        load_report(plain)


def test_a_run_that_measured_nothing_prints_its_thresholds_as_not_evaluated() -> None:
    plan = plan_of({"get": 2}, ("error_rate < 0.5%",))
    report = report_of(plan, [frame("sustain", 0, 0.0, 1.0, {"get": {}})])
    # a snapshot written before thresholds were left unevaluated said they passed
    for each in (report, replace(report, thresholds=[replace(report.thresholds[0], ok=True)])):
        lines = summary_table(each).splitlines()
        assert any(line.startswith("NOTHING MEASURED") for line in lines)
        assert "threshold NOT EVALUATED: error_rate < 0.5% (nothing measured)" in lines
        assert not any("PASS" in line for line in lines)


def test_a_run_stopped_because_no_session_could_open_says_why_in_one_line() -> None:
    why = "no session could open in 5 s (4 sessions, 12 failed opens); stopped early"
    report = report_of(
        plan_of({"read": 2, "write": 2}, ("error_rate < 0.5%",)),
        [frame("sustain", 0, 0.0, 1.0, {"read": {"errors": 6}, "write": {"errors": 6}})],
        stop_reason=NO_SESSION,
    )
    notices = [
        NoticeEntry(kind=NO_SESSION_NOTICE, message=why, elapsed=5.0),
        NoticeEntry(kind="target", message="the target process (pid 7) is gone", elapsed=5.5),
    ]
    lines = summary_table(replace(report, notices=notices)).splitlines()
    assert lines[1] == f"NOTHING MEASURED: {why}"
    assert lines[2].startswith("generator cpu peak")
    assert lines[3:] == [
        "notice [target]: the target process (pid 7) is gone",
        "PARTIAL RUN (no-session)",
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.25, "0.25"), (12.5, "12.5"), (999.7, "1,000"), (1000.0, "1,000"), (9_999.4, "9,999"),
     (12_345.0, "12.3k"), (999_600.0, "1M"), (1.5e6, "1.5M")],
)  # fmt: skip
def test_rates_are_written_in_digits_never_in_exponent_form(value: float, text: str) -> None:
    assert format_value("throughput", value) == f"{text}/s"
    assert "e+" not in plain_number(value)


def test_an_open_model_rate_of_a_million_is_written_out() -> None:
    model = LoadModel(type="open", sessions=40, rate=1e6, ramp_to=2e6)
    assert describe_model(model) == "open model, 1,000,000/s -> 2,000,000/s over 40 sessions"


def test_the_clock_and_the_generator_s_delay_are_said() -> None:
    report = report_of(
        plan_of({"get": 2}),
        [
            frame(
                "sustain",
                0,
                0.0,
                1.0,
                {"get": {"ok": 100, "latency_ns": 30_000, "delay_ns": 90_000}},
            )
        ],
    )
    kernel = replace(report, clock=ClockReport(setting="kernel", receive="kernel", send="kernel"))
    text = summary_table(kernel)
    assert "closed model, 2 sessions  kernel clock" in text
    assert "generator delay: p50 90µs, p99 90µs (replies waiting for the generator" in text
    assert "finding: get: replies waited 90 µs (p50) in the generator" in text
    mixed = replace(report, clock=ClockReport(setting="kernel", receive="kernel", send="user"))
    assert "kernel clock (send: user)" in summary_table(mixed)
    assert " clock" not in summary_table(report).splitlines()[1]  # a report from before
