"""The early stop of a run none of whose sessions could open, interval by interval."""

from __future__ import annotations

from dataclasses import replace

from protobench.engine.events import IntervalUpdate
from protobench.engine.no_session import NO_SESSION_SECONDS, NoSessionWatch
from protobench.engine.summaries import EMPTY_OP


def _interval(elapsed: float, connects: int = 0, refused: int = 0) -> IntervalUpdate:
    counters = {"connects": connects, "connect_failed": refused} if connects or refused else {}
    total = replace(
        EMPTY_OP,
        errors=refused,
        errors_by_class={"refused": refused} if refused else {},
        last_errors={"refused": "refused: 127.0.0.1:1 refused the connection"} if refused else {},
        counters=counters,
    )
    return IntervalUpdate("sustain", 0, elapsed, 1.0, {}, total, 0.0, 0)


def test_no_session_open_for_the_bound_stops_the_run_with_the_first_error_and_its_count() -> None:
    watch = NoSessionWatch(opened=0, failed=4)
    assert watch.add(_interval(0.1)) is None  # no error yet
    assert watch.add(_interval(1.0, refused=4)) is None
    assert watch.add(_interval(2.0, refused=3)) is None
    reason = watch.add(_interval(NO_SESSION_SECONDS, refused=5))
    assert reason == (
        "no session could open in 5 s (4 sessions, 12 failed opens); first error: refused: "
        "127.0.0.1:1 refused the connection (12 times); stopped early"
    )
    assert watch.add(_interval(NO_SESSION_SECONDS + 1, refused=5)) is None  # once


def test_one_session_that_opens_disarms_it() -> None:
    watch = NoSessionWatch(opened=0, failed=4)
    assert watch.add(_interval(1.0, refused=4)) is None
    assert watch.add(_interval(2.0, connects=1, refused=3)) is None
    assert watch.add(_interval(2 * NO_SESSION_SECONDS, refused=4)) is None


def test_a_run_whose_sessions_opened_at_the_start_is_never_stopped() -> None:
    for opened, failed in ((4, 0), (1, 3), (0, 0)):
        watch = NoSessionWatch(opened, failed)
        assert watch.add(_interval(2 * NO_SESSION_SECONDS, refused=9)) is None
