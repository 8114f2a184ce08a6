"""The open model's rate: its ramp over the run and its shares, one rule for the schedule,
the plan and the HTML report's offered rate."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protobench.engine.rates import ramped_rate, rate_shares


@dataclass(frozen=True)
class Group:
    name: str
    every: float | None
    share: float


def test_the_rate_ramps_linearly_then_holds() -> None:
    assert ramped_rate(1000.0, 3000.0, 10.0, 0.0) == 1000.0
    assert ramped_rate(1000.0, 3000.0, 10.0, 2.5) == pytest.approx(1500.0)
    assert ramped_rate(1000.0, 3000.0, 10.0, 10.0) == 3000.0
    assert ramped_rate(1000.0, 3000.0, 10.0, 60.0) == 3000.0
    assert ramped_rate(1000.0, 1000.0, 10.0, 5.0) == 1000.0


def test_periodic_groups_take_no_share_of_the_rate() -> None:
    groups = [Group("get", None, 3.0), Group("put", None, 1.0), Group("list", 2.0, 1.0)]
    assert rate_shares(groups) == {"get": 0.75, "put": 0.25}
    assert rate_shares([Group("list", 2.0, 1.0)]) == {}
