"""The report's clock (where the exchanges' times came from), its notice when the kernel's
clock was asked for and not had, and the finding when the generator's delay is large."""

from __future__ import annotations

import pytest

from protobench.engine.report import clock_report
from protobench.engine.report_model import ClockReport
from protobench.engine.summaries import LatencySummary, OpSummary, PhaseSummary
from protobench.engine.verdicts import delay_findings


def _hello(sessions: int, receive: int, send: int, reason: str | None = None) -> dict[str, object]:
    hello: dict[str, object] = {
        "clock": {"get": {"sessions": sessions, "kernel_receive": receive, "kernel_send": send}}
    }
    if reason:
        hello["clock_reason"] = reason
    return hello


def test_every_session_on_the_kernel_s_clock_says_so_without_a_notice() -> None:
    report, note = clock_report("kernel", [_hello(2, 2, 2), _hello(3, 3, 3)], "http")
    assert report == ClockReport(setting="kernel", receive="kernel", send="kernel")
    assert note is None


def test_the_user_clock_asked_for_is_the_user_clock_without_a_notice() -> None:
    report, note = clock_report("user", [_hello(4, 0, 0)], "http")
    assert report == ClockReport(setting="user", receive="user", send="user")
    assert note is None


@pytest.mark.parametrize(
    ("hellos", "receive", "send", "says"),
    [
        ([_hello(4, 0, 0, "kernel socket timestamps need Linux")], "user", "user", "need Linux"),
        ([_hello(4, 0, 0)], "user", "user", "the mqtt plugin does not read"),
        ([_hello(4, 4, 0)], "kernel", "user", "no send timestamps"),
        ([_hello(2, 2, 2), _hello(2, 0, 0)], "mixed", "mixed", "2 of 4 sessions"),
    ],
)
def test_a_kernel_clock_not_had_everywhere_says_why_in_one_line(
    hellos: list[dict[str, object]], receive: str, send: str, says: str
) -> None:
    report, note = clock_report("kernel", hellos, "mqtt")
    assert (report.receive, report.send) == (receive, send)
    assert note is not None
    assert says in note
    assert "\n" not in note


def _phase(delay_p50: float | None, latency_p50: float) -> PhaseSummary:
    op = OpSummary(
        ok=100,
        errors=0,
        error_rate=0.0,
        throughput=100.0,
        latency_us=LatencySummary(count=100, p50=latency_p50),
        generator_delay_us=None if delay_p50 is None else LatencySummary(count=100, p50=delay_p50),
    )
    return PhaseSummary(duration_s=1.0, total=op, ops={"get": op})


def test_a_closed_run_whose_replies_wait_in_the_generator_says_so() -> None:
    (line,) = delay_findings(_phase(240.0, 60.0), open_model=False)
    assert line.startswith("get: replies waited 240 µs (p50)")
    assert "4.0x the latency's p50 (60 µs)" in line
    assert delay_findings(_phase(20.0, 60.0), open_model=False) == []


def test_the_open_model_s_lazy_reads_are_not_a_finding_until_past_their_bound() -> None:
    assert delay_findings(_phase(450.0, 60.0), open_model=True) == []
    (line,) = delay_findings(_phase(9_000.0, 60.0), open_model=True)
    assert "the generator is behind" in line


def test_no_delay_measured_no_finding() -> None:
    assert delay_findings(_phase(None, 60.0), open_model=False) == []
    assert delay_findings(None, open_model=False) == []
