"""The MQTT findings name who held messages back, with the figures."""

from __future__ import annotations

from protobench.protocols.mqtt.diagnose import findings
from protobench.protocols.mqtt.plugin import MqttProtocol


def test_a_run_where_everything_arrived_has_no_finding() -> None:
    ops = {"publish": {}, "subscribe": {"received": 1000, "expected": 1000}}
    assert findings(ops) == []


def test_broker_drops_are_named_as_the_broker_s() -> None:
    ops = {"subscribe": {"received": 600, "expected": 1000, "lost": 400, "broker_dropped": 400}}
    [finding] = findings(ops)
    assert "the broker dropped 400 messages" in finding
    assert "600 of 1,000 expected" in finding


def test_a_backlog_without_drops_blames_the_subscribers_not_the_broker() -> None:
    ops = {"subscribe": {"received": 300_000, "expected": 1_000_000, "undelivered": 700_000}}
    [finding] = findings(ops)
    assert finding.startswith("subscribers fell behind: 700,000 messages not received")
    assert "the broker dropped none" in finding
    ops = {"subscribe": {"received": 10, "expected": 10, "unfinished": 3}}
    assert "3 publishers' ends still queued" in findings(ops)[0]


def test_gaps_and_a_late_generator_are_findings_of_their_own() -> None:
    ops = {"publish": {"behind": 5000}, "subscribe": {"received": 90, "expected": 100, "lost": 10}}
    lost, generator = findings(ops)
    assert lost.startswith("10 messages lost on the way")
    assert generator.startswith("the generator fell behind its schedule: 5,000 publishes")


def test_a_late_generator_that_offered_its_whole_rate_is_not_said_to_offer_fewer() -> None:
    """Issue 30: late publishes are still sent; every expected message arrived here, so the
    finding names the lateness and never claims fewer messages were offered."""
    ops = {"publish": {"behind": 40}, "subscribe": {"received": 5000, "expected": 5000}}
    [finding] = findings(ops)
    assert "40 publishes went out more than a millisecond after their intended time" in finding
    assert "fewer" not in finding
    [storm] = findings({"connect": {"behind": 7, "ok": 100}})  # any op the open model drives
    assert storm.startswith("the generator fell behind its schedule: 7 connect exchanges went out")
    assert "fewer" not in storm


def test_the_plugin_s_hook_is_the_pure_function_and_kinds_cover_every_op() -> None:
    plugin = MqttProtocol()
    ops = {"subscribe": {"received": 1, "expected": 2, "undelivered": 1}}
    assert plugin.diagnose(ops) == findings(ops)
    assert set(plugin.latency_kinds) == set(plugin.operations)
    assert plugin.latency_kind("publish", {"qos": 0}) == "local_write"
    assert plugin.latency_kind("publish", {"qos": 1}) == "to_ack"
    assert plugin.latency_kind("subscribe", {"qos": 1}) == "one_way"


def test_a_connect_only_storm_is_diagnosed_from_its_connections_not_from_subscribers() -> None:
    """A broker that accepts TCP and answers no CONNECT: the storm's timeouts are named, and
    nothing is said of subscribers or publishers the profile does not have."""
    ops = {"connect": {"ok": 120, "errors:timeout": 400, "errors:refused": 3, "connects": 120}}
    [finding] = findings(ops)
    assert finding.startswith("connect: 403 of 523 connection attempts failed")
    assert "refused 3, timeout 400" in finding
    assert "no CONNACK in time" in finding
    assert "subscriber" not in finding
    assert findings({"connect": {"ok": 500, "connects": 500}}) == []
    # counters a profile without subscribers cannot have are not read as a backlog
    assert findings({"connect": {"ok": 5, "unfinished": 2}}) == []


def test_a_lagging_subscriber_says_how_far_behind_it_was() -> None:
    ops = {
        "subscribe": {"received": 9000, "expected": 10000, "undelivered": 1000,
                      "lagging": 1, "lag_ms": 5500},
        "publish": {"ok": 10000},
    }  # fmt: skip
    [finding] = findings(ops)
    assert "the subscriber was 5.5 s behind" in finding
    ops["subscribe"].update(lagging=2, lag_ms=3000)
    assert "2 subscribers were on average 1.5 s behind" in findings(ops)[0]
