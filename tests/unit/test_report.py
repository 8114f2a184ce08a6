"""Verdicts and exit codes of the report."""

from __future__ import annotations

from typing import Any

from protobench.engine.bounds import Tally, busy, lagging
from protobench.engine.report import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_THRESHOLDS,
    exit_code_for,
    redact_url,
    verdicts,
)


def _report(
    model: str = "closed", late: int = 0, partial: bool = False, behind: int = 0
) -> dict[str, Any]:
    total = {"ok": 1000, "errors": 0, "late": late, "counters": {"behind": behind}}
    return {
        "partial": partial,
        "model": {"type": model},
        "thresholds": [{"expr": "p99 < 5ms", "value": 1.0, "ok": True}],
        "phases": {"sustain": {"total": total}},
    }


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
    result = verdicts(_report(), _busy([95, 97, 99, 40]), _lagging([1.0] * 4))
    assert result["generator_bound"]
    assert "90% of a core in 75%" in result["reason"]


def test_not_generator_bound_when_workers_have_headroom() -> None:
    result = verdicts(_report(), _busy([50, 60, 95, 40, 45]), _lagging([1.0] * 5))
    assert not result["generator_bound"]
    assert result["reason"] is None


def test_event_loop_lag_makes_the_generator_the_bottleneck() -> None:
    result = verdicts(_report(), _busy([10] * 10), _lagging([80.0, 90.0] + [1.0] * 8))
    assert result["generator_bound"]
    assert "lagged" in result["reason"]


def test_open_model_late_arrivals_are_reported_with_the_cause() -> None:
    result = verdicts(_report("open", late=200, behind=150), _busy([99] * 4), _lagging([1.0] * 4))
    assert result["late_fraction"] == 0.2
    assert "15.0% of the arrivals more than 1 ms after" in result["reason"]
    assert "fell behind" in result["reason"]


def test_open_model_busy_worker_that_keeps_arrivals_on_time_is_not_generator_bound() -> None:
    # under 50 µs between arrivals the driver yields to the loop: a full core, all on time
    result = verdicts(_report("open", late=5, behind=30), _busy([99] * 4), _lagging([1.0] * 4))
    assert not result["generator_bound"]  # 3% a millisecond late: the host's scheduling
    assert result["late_fraction"] == 0.005


def test_exit_codes() -> None:
    assert exit_code_for({**_report(), "verdicts": {"thresholds_passed": True}}) == EXIT_OK
    assert exit_code_for({**_report(), "verdicts": {"thresholds_passed": False}}) == EXIT_THRESHOLDS
    partial = {**_report(partial=True), "verdicts": {"thresholds_passed": True}}
    assert exit_code_for(partial) == EXIT_INCOMPLETE


def test_passwords_in_urls_are_redacted() -> None:
    assert redact_url("mqtt://bob:pw@127.0.0.1:1883/x") == "mqtt://bob:<secret>@127.0.0.1:1883/x"
    assert redact_url("http://127.0.0.1:80/") == "http://127.0.0.1:80/"


def test_open_model_busy_worker_with_no_free_session_is_generator_bound() -> None:
    # beyond what the worker can do: its core is full and arrivals wait for a session
    result = verdicts(_report("open", late=300), _busy([99] * 4), _lagging([1.0] * 4))
    assert result["generator_bound"]
    assert "90% of a core" in result["reason"]
    assert "30.0% of arrivals were late" in result["reason"]


def test_open_model_late_arrivals_with_an_idle_worker_are_the_targets() -> None:
    result = verdicts(_report("open", late=300), _busy([40] * 4), _lagging([1.0] * 4))
    assert not result["generator_bound"]
    assert result["late_fraction"] == 0.3
