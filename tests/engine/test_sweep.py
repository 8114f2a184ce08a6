"""Sweeps: axes, levels, the knee and early stops, driven by a model of a saturating server."""

from __future__ import annotations

from typing import Any

import pytest

from protobench.engine.report_model import Report, load_report
from protobench.engine.sweep import (
    Axis,
    Point,
    Sweep,
    apply_level,
    find_knee,
    grid,
    parse_axis,
)
from protobench.profiles.settings import Overrides

CAPACITY = 10_000.0  # requests per second the modelled server can do
SERVICE_US = 1_000.0  # its latency when idle


MINIMAL = {
    "profile": "model",
    "protocol": "http",
    "started_at": "2026-01-01T00:00:00+00:00",
    "verdicts": {"generator_bound": False},
}
"""The keys a report needs besides those the sweep reads."""


def closed_model(connections: int, errors_from: int = 10**9) -> dict[str, Any]:
    """A report of a closed-model run (Little's law: throughput = connections / latency)."""
    latency_us = max(SERVICE_US, connections / CAPACITY * 1e6)
    throughput = connections / (latency_us / 1e6)
    error_rate = 0.2 if connections >= errors_from else 0.0
    return {
        **MINIMAL,
        "stop_reason": "completed",
        "partial": False,
        "processes": 2,
        "phases": {
            "sustain": {
                "duration_s": 10.0,
                "ops": {},
                "total": {
                    "ok": int(throughput * 10),
                    "errors": int(throughput * 10 * error_rate),
                    "error_rate": error_rate,
                    "throughput": throughput,
                    "latency_us": {"p50": latency_us, "p99": latency_us * 3},
                },
            }
        },
        "resources": {
            "generator": {"worker_cpu_mean": 20.0},
            "target": {"cpu_mean": min(100.0, throughput / CAPACITY * 100)},
        },
        "verdicts": {"generator_bound": False},
        "snapshot": f"/store/run-c{connections}.json.gz",
    }


class Recorder:
    """A runner that answers with the model and remembers what it was asked."""

    def __init__(self, errors_from: int = 10**9, interrupt_at: int | None = None) -> None:
        self.calls: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.errors_from = errors_from
        self.interrupt_at = interrupt_at

    def __call__(self, level: dict[str, Any], labels: dict[str, Any]) -> Report:
        self.calls.append((level, labels))
        report = closed_model(level["connections"], self.errors_from)
        if level["connections"] == self.interrupt_at:
            report["stop_reason"] = "interrupted"
            report["partial"] = True
        return load_report(report)


def test_axes_parse_units_and_options() -> None:
    assert parse_axis("connections=1,2,4") == Axis("connections", (1, 2, 4), ("1", "2", "4"))
    assert parse_axis("rate=100/s, 2000").levels == (100.0, 2000.0)
    assert parse_axis("duration=500ms,2s").levels == (0.5, 2.0)
    assert parse_axis("ramp-to=10").key == "ramp_to"
    assert parse_axis("options.body_size=10,1000").levels == (10, 1000)
    assert parse_axis("serve.delay=1ms,5ms").levels == ("1ms", "5ms")
    assert parse_axis("options.method=GET,POST").levels == ("GET", "POST")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("connections", "expected KEY=LEVEL"),
        ("connections=1,,4", "expected KEY=LEVEL"),
        ("connections=0", "connections=0: expected a whole number >= 1"),
        ("rate=fast", "rate=fast: expected a rate"),
        ("colour=red", "cannot vary 'colour'"),
        ("options.=1", "cannot vary 'options.'"),
    ],
)
def test_bad_axes_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_axis(text)


def test_levels_become_overrides() -> None:
    base = Overrides(duration=3.0, options={"a": 1}, serve={"delay": "1ms"})
    got = apply_level(base, {"connections": 8, "options.b": 2, "serve.delay": "5ms"})
    assert got.values == {
        "duration": 3.0,
        "connections": 8,
        "options": {"a": 1, "b": 2},
        "serve": {"delay": "5ms"},
    }
    assert base.get("serve") == {"delay": "1ms"}


def test_grid_varies_the_load_axis_fastest() -> None:
    axes = [parse_axis("connections=1,2"), parse_axis("processes=1,2")]
    assert grid(axes) == [
        {"connections": 1, "processes": 1},
        {"connections": 2, "processes": 1},
        {"connections": 1, "processes": 2},
        {"connections": 2, "processes": 2},
    ]


def _point(throughput: float, p50: float, level: Any = None) -> Point:
    return Point({"c": level}, throughput, p50, None, 0.0, None, None, False, False, None)


def test_knee_without_numeric_levels_is_where_throughput_gains_under_ten_percent() -> None:
    # From the third to the fourth level throughput +5% while p50 doubles.
    series = [_point(1000, 1000), _point(2000, 1000), _point(7600, 1050), _point(8000, 2000)]
    assert find_knee(series) == 2
    assert find_knee(series[:3]) is None
    # Flat throughput with flat latency (a rate-limited run) is not a knee.
    assert find_knee([_point(1000, 1000), _point(1000, 1010)]) is None
    # A throughput drop with a latency climb is.
    assert find_knee([_point(5000, 1000), _point(4000, 3000)]) == 0


def test_knee_with_numeric_levels_is_where_throughput_gains_under_half_the_load_step() -> None:
    # Doubling the load: +60% throughput is fine, +25% is past the knee.
    series = [_point(1000, 1000, 8), _point(1600, 1250, 16), _point(2000, 2000, 32)]
    assert find_knee(series, "c") == 1
    # Levels that do not increase fall back to the 10% rule.
    assert find_knee([_point(1000, 1000, 8), _point(1250, 1600, 4)], "c") is None
    assert find_knee([_point(1000, 1000, "a"), _point(1050, 1600, "b")], "c") == 0


def test_sweep_runs_every_level_labels_it_and_finds_the_knee() -> None:
    sweep = Sweep([parse_axis("connections=1,2,4,8,16,32,64")], group="sweep-test")
    runner = Recorder()
    seen: list[Point] = []
    result = sweep.run(runner, on_point=seen.append)
    assert [level["connections"] for level, _ in runner.calls] == [1, 2, 4, 8, 16, 32, 64]
    assert runner.calls[2][1] == {
        "sweep": "sweep-test",
        "axis": "connections",
        "level": 4,
        "levels": {"connections": 4},
    }
    assert seen == result.points
    # Capacity 10k/s at 1 ms: 10 connections saturate it; from 8 to 16 connections
    # throughput gains 25% for twice the load while p50 rises 60%: 8 is the knee.
    assert [result.points[i].assignment for i in result.knees] == [{"connections": 8}]
    point = result.points[3]
    assert point.throughput == pytest.approx(8000)
    assert point.generator_cpu == 40.0
    assert point.target_cpu == pytest.approx(80.0)
    assert point.snapshot == "/store/run-c8.json.gz"
    assert result.stops == []
    data = result.to_dict()
    assert [p["knee"] for p in data["points"]] == [False, False, False, True, False, False, False]
    assert data["knees"] == [{"connections": 8}]


def test_errors_past_the_threshold_skip_the_higher_levels_of_the_series() -> None:
    sweep = Sweep(
        [parse_axis("connections=1,8,32,64"), parse_axis("processes=1,2")],
        stop_on=["error_rate > 5%"],
    )
    runner = Recorder(errors_from=32)
    result = sweep.run(runner)
    assert [tuple(level.values()) for level, _ in runner.calls] == [
        (1, 1),
        (8, 1),
        (32, 1),
        (1, 2),
        (8, 2),
        (32, 2),
    ]
    assert result.skipped == [
        {"connections": 64, "processes": 1},
        {"connections": 64, "processes": 2},
    ]
    assert result.stops == [
        "connections=32 processes=1: error_rate > 5% (observed 0.2)",
        "connections=32 processes=2: error_rate > 5% (observed 0.2)",
    ]
    assert not result.interrupted


def test_an_interrupted_run_ends_the_sweep() -> None:
    sweep = Sweep([parse_axis("connections=1,2,4,8")])
    result = sweep.run(Recorder(interrupt_at=2))
    assert len(result.points) == 2
    assert result.interrupted
    assert result.skipped == [{"connections": 4}, {"connections": 8}]
    assert result.stops == ["connections=2: interrupted"]


def test_a_run_without_a_sustain_phase_stops_its_series() -> None:
    def failing(level: dict[str, Any], labels: dict[str, Any]) -> Report:
        return load_report({**MINIMAL, "stop_reason": "error", "partial": True, "phases": {}})

    result = Sweep([parse_axis("connections=1,2")]).run(failing)
    assert result.stops == ["connections=1: no sustain phase was measured (error)"]
    assert result.skipped == [{"connections": 2}]
    assert result.points[0].throughput is None


def test_sweep_input_errors() -> None:
    with pytest.raises(ValueError, match="at least one axis"):
        Sweep([])
    with pytest.raises(ValueError, match="once"):
        Sweep([parse_axis("connections=1"), parse_axis("connections=2")])
    with pytest.raises(ValueError, match="threshold"):
        Sweep([parse_axis("connections=1")], stop_on=["errors are bad"])


def fanout_model(connections: int, delivered: dict[int, float], host_busy: int = 0) -> Report:
    """A fan-out run: publishers' latency is a local write (flat), the subscribers' end to end
    climbs as in the MQTT getting-started sweep (0.49 ms, 774 ms, 2.3 s); the total mixes
    the two kinds, so it has no latency."""
    p50 = {10: 490.0, 50: 774_000.0, 200: 2_300_000.0}[connections]
    op = {"ok": 1000, "errors": 0, "error_rate": 0.0}
    return load_report(
        {
            **MINIMAL,
            "stop_reason": "completed",
            "partial": False,
            "processes": 2,
            "phases": {
                "sustain": {
                    "duration_s": 10.0,
                    "ops": {
                        "publish": {**op, "throughput": connections * 1000.0,
                                    "latency_kind": "local_write",
                                    "latency_us": {"p50": 3.0, "p99": 9.0}},
                        "subscribe": {**op, "throughput": delivered[connections],
                                      "latency_kind": "one_way",
                                      "latency_us": {"count": 1000, "p50": p50, "p99": p50 * 2}},
                    },
                    "total": {**op, "throughput": 1.0, "latency_kind": "mixed", "latency_us": {}},
                }
            },
            "resources": {"generator": {"worker_cpu_mean": 20.0}, "target": {"cpu_mean": 50.0}},
            "verdicts": {"generator_bound": False, "host_saturated": connections == host_busy},
        }
    )  # fmt: skip


def test_a_fanout_sweep_judges_the_subscribers_end_to_end_latency_not_the_mixed_total() -> None:
    delivered = {10: 10_000.0, 50: 45_000.0, 200: 50_000.0}
    sweep = Sweep([parse_axis("connections=10,50,200")])
    result = sweep.run(lambda level, _: fanout_model(level["connections"], delivered, 200))
    assert [p.op for p in result.points] == ["subscribe"] * 3
    assert [p.p50 for p in result.points] == [490.0, 774_000.0, 2_300_000.0]
    assert result.points[1].throughput == 45_000.0
    assert [result.points[i].assignment for i in result.knees] == [{"connections": 50}]
    assert [p.host_saturated for p in result.points] == [False, False, True]
    # --op publish: the publishers' figures (a local write: flat, no knee)
    by_op = Sweep([parse_axis("connections=10,50,200")], op="publish").run(
        lambda level, _: fanout_model(level["connections"], delivered)
    )
    assert [p.p50 for p in by_op.points] == [3.0, 3.0, 3.0]
    assert by_op.knees == []


def test_a_geometric_sweep_flat_from_its_first_step_does_not_call_the_lowest_level_the_knee() -> (
    None
):
    delivered = {10: 10_000.0, 50: 20_000.0, 200: 21_000.0}
    result = Sweep([parse_axis("connections=10,50,200")]).run(
        lambda level, _: fanout_model(level["connections"], delivered)
    )
    assert result.knees == []
    [note] = result.notes
    assert "the knee is at or below connections=10" in note
    assert result.to_dict()["notes"] == [note]
    # not geometric (+20% per level): the first level may be the knee
    points = [
        Point({"c": c}, t, p, None, 0.0, None, None, False, False, None)
        for c, t, p in [(10, 1000.0, 1000.0), (12, 1010.0, 2000.0), (14, 1000.0, 4000.0)]
    ]
    assert find_knee(points, "c") == 0
