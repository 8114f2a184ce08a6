"""The timing tests' excuse: only the run's own host-saturated verdict, or one retry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.busy import BusyHostWarning, FiguresFailed, figures, retry_figures_once
from tests.support.cli import CliResult

SATURATED = {"host_saturated": True, "host_reason": "the host's CPU was >= 90% busy"}


def _run(**verdicts: Any) -> CliResult:
    return CliResult(0, json.dumps({"verdicts": {"generator_bound": False, **verdicts}}), "")


def test_figures_that_hold_are_checked() -> None:
    p99 = 20_100
    with figures(_run()):
        assert p99 <= 21_000


def test_a_saturated_host_is_the_verdict_checked_instead_of_the_figure() -> None:
    p99 = 25_055
    excused = pytest.warns(BusyHostWarning, match="p99 over.*judged its host saturated: the host")
    with excused, figures(_run(**SATURATED)):
        assert p99 <= 21_000, "p99 over its bound"


@pytest.mark.parametrize(
    "verdicts",
    [{}, {**SATURATED, "generator_bound": True}],
    ids=["quiet host", "generator-bound too"],
)
def test_a_figure_fails_unless_only_the_host_is_blamed(verdicts: dict[str, Any]) -> None:
    with pytest.raises(FiguresFailed, match="p99 over its bound"), figures(_run(**verdicts)):
        raise AssertionError("p99 over its bound")


def test_other_failures_are_never_excused() -> None:
    with pytest.raises(ValueError, match="not a figure"), figures(_run(**SATURATED)):
        raise ValueError("not a figure")


def test_a_failed_figure_is_retried_once_and_said() -> None:
    calls: list[int] = []

    @retry_figures_once
    def timing_test(fail: int) -> None:
        calls.append(len(calls))
        with figures(_run()):
            assert len(calls) > fail, "p99 over its bound"

    with pytest.warns(BusyHostWarning, match="timing_test retried once after: p99 over"):
        timing_test(fail=1)
    assert calls == [0, 1]
    calls.clear()
    with pytest.warns(BusyHostWarning), pytest.raises(FiguresFailed):
        timing_test(fail=2)
    assert calls == [0, 1]
    calls.clear()
    with pytest.raises(AssertionError, match="a count"):
        retry_figures_once(lambda: calls.append(0) or _fail("a count"))()
    assert calls == [0]


def _fail(message: str) -> None:
    raise AssertionError(message)
