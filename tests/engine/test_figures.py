"""The engine's shared figures (errors by class and code, counters, run time, fds) and samples."""

from __future__ import annotations

import resource

import psutil

from protobench.engine.events import IntervalUpdate
from protobench.engine.figures import (
    counter_figures,
    error_shares,
    fds_nearest_limit,
    run_seconds,
)
from protobench.engine.resources import sample_process
from tests.support.scripted_run import Script, scripted_run


def test_error_shares_group_codes_under_their_class() -> None:
    rows = error_shares(
        {"protocol": 30, "timeout": 10},
        {"protocol:503": 20, "protocol:500": 10, "timeout:x": 10},
    )
    assert [(r.cls, r.count, r.share) for r in rows] == [
        ("protocol", 30, 0.75),
        ("timeout", 10, 0.25),
    ]
    assert rows[0].codes == (("503", 20), ("500", 10))


def test_counter_figures_show_down_time_in_seconds_and_late() -> None:
    figures = counter_figures({"down_us": 2_500_000, "received": 7}, late=3)
    assert figures == {"down_s": 2.5, "late": 3, "received": 7}


def test_http2_stream_samples_show_as_streams_in_flight_per_connection() -> None:
    counters = {"stream_samples": 490, "connection_samples": 50, "connects": 5}
    assert counter_figures(counters, late=0) == {"connects": 5, "streams/conn": 9.8}
    assert counter_figures({"stream_samples": 0, "connection_samples": 0}, late=0) == {}


def test_bytes_in_and_out_are_rates_over_the_phase() -> None:
    figures = counter_figures({"sent": 4}, late=0, bytes_in=1000, seconds=2.0, bytes_out=2000)
    assert figures == {"in/s": 500.0, "out/s": 1000.0, "sent": 4}
    assert list(figures)[:2] == ["in/s", "out/s"]
    assert counter_figures({}, late=0, bytes_in=1000, bytes_out=2000) == {}


def test_an_older_snapshots_bytes_sent_counter_is_still_its_bytes_out() -> None:
    figures = counter_figures({"bytes_sent": 2000}, late=0, seconds=2.0)
    assert figures == {"out/s": 1000.0}


def test_run_seconds_is_the_end_of_the_last_phase() -> None:
    assert run_seconds(scripted_run(Script(stop_at=5.0)).report) == 5.0


def test_fds_nearest_limit_is_the_fullest_process() -> None:
    workers: list[dict[str, float]] = [
        {"fds": 90, "fd_limit": 1000},
        {"fds": 60, "fd_limit": 100},
        {"cpu": 1.0},
    ]
    assert fds_nearest_limit(workers) == (60, 100)
    assert fds_nearest_limit([{"cpu": 1.0}]) is None


def test_a_process_sample_has_its_open_file_limit() -> None:
    sample = sample_process(psutil.Process())
    assert sample is not None
    assert sample["fd_limit"] == resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_each_interval_names_every_workers_loop_lag() -> None:
    updates = [e for e in scripted_run(Script()).events if isinstance(e, IntervalUpdate)]
    assert updates[0].worker_lag_ms == {0: 1.5, 1: 2.5}
    assert updates[0].lag_ms == 2.5
