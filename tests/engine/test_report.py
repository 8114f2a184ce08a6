"""Verdicts and exit codes of the report."""

from __future__ import annotations

from dataclasses import replace

from protobench.engine.bounds import Tally, busy, lagging
from protobench.engine.report import (
    exit_code_for,
)
from protobench.engine.report_model import CpuVerdict, HostResources, LoadModel, Report, Verdicts
from protobench.engine.summaries import LatencySummary, OpSummary, PhaseSummary
from protobench.engine.thresholds import judge
from protobench.engine.verdicts import cpu_verdicts
from protobench.redaction import redact_url
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.thresholds import parse_threshold


def _sustain(late: int = 0, behind: int = 0) -> PhaseSummary:
    total = OpSummary(
        ok=1000,
        errors=0,
        error_rate=0.0,
        throughput=1000.0,
        late=late,
        counters={"behind": behind},
        latency_us=LatencySummary(count=0),
        send_lateness_us=LatencySummary(count=1000 - late),  # the others were sent at once
    )
    return PhaseSummary(duration_s=1.0, total=total, ops={})


def verdicts(
    model: str, busy_samples: Tally, lagging_intervals: Tally, late: int = 0, behind: int = 0
) -> CpuVerdict:
    sustain = _sustain(late, behind)
    return cpu_verdicts(
        model == "open", sustain, HostResources(), busy_samples, lagging_intervals, Tally()
    )


def _report(partial: bool = False, thresholds_passed: bool = True) -> Report:
    return Report(
        profile="p",
        protocol="http",
        model=LoadModel(type="closed"),
        started_at="2026-01-01T00:00:00+00:00",
        partial=partial,
        phases={"sustain": _sustain()},
        verdicts=Verdicts(generator_bound=False, thresholds_passed=thresholds_passed),
    )


def _busy(cpus: list[float]) -> Tally:
    tally = Tally()
    for cpu in cpus:
        tally.add(busy([{"cpu": 20.0}, {"cpu": cpu}]))
    return tally


def _lagging(lags: list[float]) -> Tally:
    tally = Tally()
    for lag in lags:
        tally.add(lagging(lag))
    return tally


def test_generator_bound_when_a_worker_saturates_its_core() -> None:
    result = verdicts("closed", _busy([95, 97, 99, 40]), _lagging([1.0] * 4))
    assert result.generator_bound
    assert "90% of a core in 75%" in str(result.reason)


def test_not_generator_bound_when_workers_have_headroom() -> None:
    result = verdicts("closed", _busy([50, 60, 95, 40, 45]), _lagging([1.0] * 5))
    assert not result.generator_bound
    assert result.reason is None


def test_event_loop_lag_makes_the_generator_the_bottleneck() -> None:
    result = verdicts("closed", _busy([10] * 10), _lagging([80.0, 90.0] + [1.0] * 8))
    assert result.generator_bound
    assert "lagged" in str(result.reason)


def test_open_model_late_arrivals_are_reported_with_the_cause() -> None:
    result = verdicts("open", _busy([99] * 4), _lagging([1.0] * 4), late=200, behind=150)
    assert result.late_fraction == 0.2
    assert "15.0% of the arrivals more than 1 ms after" in str(result.reason)
    assert "fell behind" in str(result.reason)


def test_open_model_busy_worker_that_keeps_arrivals_on_time_is_not_generator_bound() -> None:
    # under 50 µs between arrivals the driver yields to the loop: a full core, all on time
    result = verdicts("open", _busy([99] * 4), _lagging([1.0] * 4), late=5, behind=30)
    assert not result.generator_bound  # 3% a millisecond late: the host's scheduling
    assert result.late_fraction == 0.005


def test_exit_codes() -> None:
    assert exit_code_for(_report()) == ExitCode.OK
    assert exit_code_for(_report(thresholds_passed=False)) == ExitCode.FAILED
    assert exit_code_for(_report(partial=True)) == ExitCode.INCOMPLETE


def test_passwords_in_urls_are_redacted() -> None:
    assert redact_url("mqtt://bob:pw@127.0.0.1:1883/x") == "mqtt://bob:<secret>@127.0.0.1:1883/x"
    assert redact_url("http://127.0.0.1:80/") == "http://127.0.0.1:80/"


def test_open_model_busy_worker_with_no_free_session_is_generator_bound() -> None:
    # beyond what the worker can do: its core is full and arrivals wait for a session
    result = verdicts("open", _busy([99] * 4), _lagging([1.0] * 4), late=300)
    assert result.generator_bound
    assert "90% of a core" in str(result.reason)
    assert "30.0% of arrivals were late" in str(result.reason)


def test_open_model_late_arrivals_with_an_idle_worker_are_the_targets() -> None:
    result = verdicts("open", _busy([40] * 4), _lagging([1.0] * 4), late=300)
    assert not result.generator_bound
    assert result.late_fraction == 0.3


def test_the_late_share_is_of_the_arrivals_due_even_when_no_exchange_ended() -> None:
    # no session opened: 3 failed opens, 4000 arrivals waited in vain
    total = OpSummary(
        ok=0, errors=3, error_rate=1.0, throughput=0.0, late=4000,
        latency_us=LatencySummary(count=0),
    )  # fmt: skip
    sustain = PhaseSummary(duration_s=1.0, total=total, ops={})
    result = cpu_verdicts(True, sustain, HostResources(), _busy([10]), _lagging([1.0]), Tally())
    assert result.late_fraction == 1.0
    assert judge(parse_threshold("late < 50%"), sustain) == (1.0, False)
    sent = replace(total, ok=1000, errors=0, late=250, send_lateness_us=LatencySummary(count=750))
    assert sent.late_share == 0.25
