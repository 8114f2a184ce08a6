"""The report's verdicts on runs that did not work: nothing exchanged, an op that never
worked, sessions down, mixed latency kinds, a busy host; built from worker frames."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from protobench.engine.bounds import Tally
from protobench.engine.report import (
    exit_code_for,
)
from protobench.engine.report_model import NO_SESSION, HostResources, to_plain
from protobench.engine.resource_log import ResourceLog
from protobench.engine.summaries import LatencySummary, OpSummary, PhaseSummary
from protobench.engine.verdicts import cpu_verdicts
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.thresholds import format_value, observed, parse_threshold
from tests.support.report_frames import frame, plan_of, report_of


def test_a_sustain_phase_with_no_exchange_exits_3_with_the_reason_even_without_thresholds() -> None:
    report = report_of(plan_of({"get": 4}), [frame("sustain", 0, 0.0, 1.0, {"get": {}})])
    assert exit_code_for(report) == ExitCode.INCOMPLETE
    reason = str(report.verdicts.incomplete_reason)
    assert "completed no exchange" in reason
    assert "still pending" in reason


def test_a_run_where_every_exchange_timed_out_exits_3_and_names_the_errors() -> None:
    plan = plan_of({"get": 4}, ("error_rate < 100%",))
    frames = [frame("sustain", 0, 0.0, 1.0, {"get": {"errors": 5, "error_class": "timeout"}})]
    report = report_of(plan, frames)
    assert exit_code_for(report) == ExitCode.INCOMPLETE
    assert "timeout=5" in str(report.verdicts.incomplete_reason)
    assert "no reply in time" in str(report.verdicts.incomplete_reason)


def test_a_target_that_answers_every_request_with_an_error_fails_even_without_thresholds() -> None:
    # 100% 503: every exchange completed, none succeeded; the op never worked
    report = report_of(plan_of({"get": 4}), [frame("sustain", 0, 0.0, 1.0, {"get": {"errors": 5}})])
    assert report.verdicts.incomplete_reason is None
    failed = [c.expr for c in report.verdicts.checks if not c.ok]
    assert failed == ["ok[get] > 0"]
    assert exit_code_for(report) == ExitCode.FAILED


def test_a_run_where_no_session_could_open_exits_3() -> None:
    frames = [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 3}})]
    report = report_of(plan_of({"get": 4}), frames, opened=0, failed=4)
    assert exit_code_for(report) == ExitCode.INCOMPLETE
    assert "no session could open (4 failed)" in str(report.verdicts.incomplete_reason)


def test_an_op_that_never_worked_fails_the_run_although_the_total_passes() -> None:
    plan = plan_of({"read": 4, "write": 1}, ("error_rate < 0.5%",))
    frames = [frame("sustain", 0, 0.0, 1.0, {"read": {"ok": 5000}, "write": {"errors": 10}})]
    report = report_of(plan, frames)
    assert report.thresholds[0].ok  # 10 of 5010 is under 0.5%: today's verdict
    failed = [c for c in report.verdicts.checks if not c.ok]
    assert [c.expr for c in failed] == ["ok[write] > 0", "error_rate[write] < 0.50%"]
    assert "op write never succeeded (10 errors in sustain" in str(failed[0].reason)
    assert "403 Forbidden" in str(failed[0].reason)
    assert exit_code_for(report) == ExitCode.FAILED


def test_a_profile_can_say_that_an_op_may_fail() -> None:
    plan = plan_of(
        {"read": 4, "write": 1},
        ("error_rate < 0.5%", "ok[write] >= 0", "error_rate[write] <= 100%"),
    )
    frames = [frame("sustain", 0, 0.0, 1.0, {"read": {"ok": 5000}, "write": {"errors": 10}})]
    report = report_of(plan, frames)
    checks = [c.expr for c in report.verdicts.checks]
    assert checks == ["ok[read] > 0", "error_rate[read] < 0.50%", "down < 5%"]
    assert all(c.ok for c in report.verdicts.checks)
    assert exit_code_for(report) == ExitCode.OK


def test_sessions_down_for_most_of_sustain_fail_by_default_with_the_reason() -> None:
    # 4 sessions × 2 s = 8 session-seconds; 5.6 of them without a connection
    counters = {"down_us": 5_600_000, "connect_failed": 40, "connects": 4}
    frames = [
        frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 100, "counters": counters}}),
        frame("sustain", 1, 1.0, 2.0, {"get": {"ok": 1}}),
    ]
    report = report_of(plan_of({"get": 4}, ("error_rate < 0.5%",)), frames)
    sustain = report.phases["sustain"]
    assert sustain.ops["get"].down_s == 5.6
    assert sustain.ops["get"].down_share == 0.7
    assert sustain.total.down_share == 0.7
    assert report.thresholds[0].ok  # every counted exchange worked
    (check,) = [c for c in report.verdicts.checks if not c.ok]
    assert check.expr == "down < 5%"
    assert "without a connection for 70.00% of sustain" in str(check.reason)
    assert "40 failed connects" in str(check.reason)
    assert exit_code_for(report) == ExitCode.FAILED
    relaxed = report_of(plan_of({"get": 4}, ("down < 80%",)), frames)
    assert [c.expr for c in relaxed.verdicts.checks] == ["ok[get] > 0"]
    assert exit_code_for(relaxed) == ExitCode.OK


def test_the_total_shows_a_latency_only_across_ops_of_one_kind() -> None:
    frames = [
        frame(
            "sustain",
            0,
            0.0,
            1.0,
            {"pub": {"ok": 10, "latency_ns": 5_000}, "sub": {"ok": 10, "latency_ns": 900_000}},
        )
    ]
    kinds = {"pub": "local_write", "sub": "one_way"}
    report = report_of(plan_of({"pub": 1, "sub": 1}, ("p99 < 5ms",)), frames, kinds=kinds)
    sustain = report.phases["sustain"]
    assert sustain.ops["pub"].latency_kind == "local_write"
    assert sustain.ops["sub"].latency_kind == "one_way"
    assert sustain.total.latency_kind == "mixed"
    assert to_plain(sustain.total.latency_us) == {}
    assert set(sustain.total.latency_by_kind or {}) == {"local_write", "one_way"}
    assert report.thresholds[0].value is None  # no TOTAL p99 to judge
    same = report_of(plan_of({"pub": 1, "sub": 1}), frames)
    assert same.phases["sustain"].total.latency_kind == "round_trip"
    assert same.phases["sustain"].total.latency_us.count == 20


def test_the_drain_of_a_stopped_run_starts_at_the_stop_not_the_planned_end() -> None:
    plan = dataclasses.replace(plan_of({"get": 1}), duration=6.0)
    frames = [
        frame("sustain", 0, 0.0, 0.8, {"get": {"ok": 5}}),
        frame("drain", 0, 0.0, 0.1, {"get": {"ok": 1}}),
    ]
    report = report_of(plan, frames, stop_reason="interrupted")
    drain = report.phases["drain"]
    assert (drain.start_s, drain.end_s) == (0.8, 0.9)
    assert report.phases["sustain"].end_s == 0.8


def test_a_saturated_host_is_not_blamed_on_the_generator() -> None:
    sustain = PhaseSummary(
        duration_s=1.0,
        total=OpSummary(
            ok=1000,
            errors=0,
            error_rate=0.0,
            throughput=1000.0,
            counters={"behind": 300},
            latency_us=LatencySummary(count=0),
            send_lateness_us=LatencySummary(count=1000),  # every arrival sent at once
        ),
        ops={},
    )
    host = HostResources(
        cpu_mean=99.0,
        workers_share_mean=4.0,
        target_share_mean=10.0,
        others_share_mean=85.0,
        cpus=2,
    )
    idle = Tally(10, 0)
    saturated = cpu_verdicts(True, sustain, host, idle, idle, Tally(10, 9))
    assert not saturated.generator_bound
    assert saturated.host_saturated
    assert saturated.host_reason is not None
    assert "others 85% of its 2 cores" in saturated.host_reason
    assert "our workers 4%" in saturated.host_reason
    assert "30.0% of the arrivals" in saturated.host_reason
    quiet = cpu_verdicts(True, sustain, host, idle, idle, Tally(10, 0))
    assert quiet.generator_bound
    assert not quiet.host_saturated


def test_a_snapshot_that_could_not_be_saved_has_its_own_exit_code() -> None:
    report = report_of(plan_of({"get": 1}), [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 5}})])
    assert exit_code_for(report) == ExitCode.OK
    error = "cannot save the snapshot in /x: Read-only file system"
    assert exit_code_for(dataclasses.replace(report, snapshot_error=error)) == ExitCode.NOT_SAVED


def test_threshold_values_are_printed_in_their_units() -> None:
    assert format_value("p99", 6007.0) == "6.01ms"
    assert format_value("error_rate", 0.0025) == "0.25%"
    assert format_value("throughput", 980.0) == "980.0/s"
    assert format_value("down", None) == "absent"
    assert parse_threshold("down < 5%").limit == 0.05
    assert observed("p99[get] < 5ms", 6007.0) == "6.01ms"


def test_rss_growth_is_divided_by_connections_when_they_are_counted() -> None:
    from protobench.engine.report import resource_summary  # noqa: PLC0415

    plan = plan_of({"sub": 200, "pub": 1})
    resources = ResourceLog()
    resources.add(
        {
            "elapsed": 1.0,
            "phase": "sustain",
            "workers": [{"pid": 1, "cpu": 10.0, "rss": 1}],
            "target": {"pid": 2, "cpu": 5.0, "rss": 2_100_000},
            "host": {"cpu": 20.0, "cpus": 2, "mem_used": 1},
        }
    )
    target = resource_summary(resources, 1_000_000, 2_100_000, plan, connects=11).target
    assert target is not None
    assert target.rss_per_connection == 100_000.0
    assert "rss_per_session" not in to_plain(target)
    fallback = resource_summary(resources, 1_000_000, 2_100_000, plan).target
    assert fallback is not None
    assert fallback.rss_per_session == round(1_100_000 / 201, 1)


def test_an_op_that_worked_only_in_warmup_has_worked() -> None:
    # a COV subscription renewed every 15 s: its one exchange of a short run is in warmup
    plan = dataclasses.replace(plan_of({"read": 1, "cov": 1}), warmup=1.0)
    frames = [
        frame("warmup", 0, 0.0, 1.0, {"read": {"ok": 50}, "cov": {"ok": 1}}),
        frame("sustain", 0, 0.0, 1.0, {"read": {"ok": 50}, "cov": {}}),
    ]
    report = report_of(plan, frames)
    (ok_cov,) = [c for c in report.verdicts.checks if c.expr == "ok[cov] > 0"]
    assert ok_cov.ok
    assert ok_cov.value == 1.0
    assert exit_code_for(report) == ExitCode.OK


def test_ops_that_only_hold_sessions_are_not_expected_to_exchange() -> None:
    # mqtt-connections: 1000 idle sessions with 60 s keepalives make no exchange in 20 s
    idle = report_of(
        plan_of({"idle": 4}),
        [frame("sustain", 0, 0.0, 1.0, {"idle": {}})],
        passive=frozenset({"idle"}),
    )
    assert idle.verdicts.incomplete_reason is None
    assert exit_code_for(idle) == ExitCode.OK
    mixed = report_of(
        plan_of({"idle": 4, "get": 1}),
        [frame("sustain", 0, 0.0, 1.0, {"idle": {}, "get": {}})],
        passive=frozenset({"idle"}),
    )
    assert "completed no exchange" in str(mixed.verdicts.incomplete_reason)


NO_EXCHANGE = [frame("sustain", 0, 0.0, 1.0, {"get": {}})]  # no reply and no error
REFUSED = [frame("sustain", 0, 0.0, 1.0, {"get": {"errors": 4, "error_class": "auth"}})]


@pytest.mark.parametrize(
    ("frames", "opened", "stop_reason"),
    [(NO_EXCHANGE, 1, "completed"), (REFUSED, 0, "completed"), (REFUSED, 0, NO_SESSION)],
    ids=["no-exchange", "no-session", "stopped-no-session"],
)
def test_a_run_that_measured_nothing_evaluates_no_threshold(
    frames: list[dict[str, Any]], opened: int, stop_reason: str
) -> None:
    plan = plan_of({"get": 4}, ("error_rate < 0.5%", "late < 1%"))
    report = report_of(plan, frames, opened=opened, failed=4 - 4 * opened, stop_reason=stop_reason)
    assert report.nothing_measured
    assert [(t.expr, t.value, t.ok) for t in report.thresholds] == [
        ("error_rate < 0.5%", None, False),
        ("late < 1%", None, False),
    ]
    assert not report.verdicts.thresholds_passed
    assert exit_code_for(report) == ExitCode.INCOMPLETE


def test_a_counter_threshold_counts_the_drain_where_the_run_s_accounting_ends() -> None:
    """Subscribers count what never came when the drain ends: `counters.undelivered == 0`
    sees it (a QoS 1 run whose subscriber was behind fails), other metrics stay sustain's."""
    plan = plan_of({"subscribe": 1}, ("counters.undelivered == 0", "counters.received > 150"))
    frames = [
        frame("sustain", 0, 0.0, 1.0, {"subscribe": {"ok": 100, "counters": {"received": 100}}}),
        frame("drain", 1, 1.0, 2.0, {"subscribe": {"counters": {"received": 60,
                                                                "undelivered": 40}}}),
    ]  # fmt: skip
    report = report_of(plan, frames)
    results = {t.expr: (t.value, t.ok) for t in report.thresholds}
    assert results["counters.undelivered == 0"] == (40.0, False)
    assert results["counters.received > 150"] == (160.0, True)
    assert exit_code_for(report) == ExitCode.FAILED


def test_memory_is_per_connection_only_where_it_means_connections() -> None:
    """A UDP target (BACnet/IP) holds no connections; a broker running pub/sub grows with its
    queues: neither figure is divided. Idle MQTT connections' growth is per connection."""
    from protobench.engine.report import resource_summary  # noqa: PLC0415
    from protobench.protocols.bacnet_ip.plugin import BacnetIpProtocol  # noqa: PLC0415
    from protobench.protocols.mqtt.plugin import MqttProtocol  # noqa: PLC0415

    plan = plan_of({"sub": 1, "pub": 200})
    resources = ResourceLog()
    growth = resource_summary(resources, 1_000_000, 48_000_000, plan, 11, per_connection=False)
    assert growth.target is not None
    assert growth.target.rss_peak == 48_000_000
    assert growth.target.rss_per_connection is None
    assert growth.target.rss_per_session is None
    mqtt = MqttProtocol()
    assert not mqtt.memory_per_connection({"publish", "subscribe"})
    assert mqtt.memory_per_connection({"idle"})
    assert mqtt.memory_per_connection({"connect", "idle"})
    assert not BacnetIpProtocol().memory_per_connection({"read-property"})
