"""A live run starts before the monitor is up: its early events reach the monitor, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from protobench.engine.events import Event, IntervalUpdate, RunFinished, RunStarted
from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader
from protobench.snapshots.store import SnapshotStore
from protobench.tui.live_source import LiveSource
from tests.support.timing import S, until

pytestmark = pytest.mark.integration


def test_events_sent_before_the_monitor_attaches_are_delivered_in_order(tmp_path: Path) -> None:
    overrides = Overrides(duration=2.0, warmup=0.0, processes=1, connections=2, rate=100.0)
    plan = resolve(loader.load("http-get"), overrides)
    source = LiveSource(plan, SnapshotStore(tmp_path / "snapshots"))
    source.start()
    until(
        lambda: any(isinstance(e, IntervalUpdate) for e in source.handover.pending),
        60 * S,
        "an interval",
    )
    seen: list[Event] = []
    asyncio.run(source.run(seen.append))
    assert isinstance(seen[0], RunStarted)
    assert isinstance(seen[-1], RunFinished)
    indexes = [e.index for e in seen if isinstance(e, IntervalUpdate) and e.phase == "sustain"]
    assert indexes == sorted(indexes)
    assert indexes[0] == 0
    assert source.report is not None
