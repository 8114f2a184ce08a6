"""Replaying a snapshot: the same events as the run, in order, with pause and seek."""

from __future__ import annotations

import asyncio
import math

import pytest

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    PhaseChanged,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.report_model import to_plain
from protobench.tui.baseline import Baseline
from protobench.tui.model import RunModel
from protobench.tui.source import ReplaySource
from protobench.tui.timeline import replay_timeline
from tests.support.scripted_run import Script, scripted_run, scripted_snapshot

SCRIPT = Script(rate=800.0, crash_at=6.0)


def test_timeline_rebuilds_the_runs_intervals_exactly() -> None:
    run = scripted_run(SCRIPT)
    timeline = replay_timeline(scripted_snapshot(SCRIPT))
    times = [t for t, _ in timeline]
    assert times == sorted(times)
    assert isinstance(timeline[0][1], RunStarted)
    assert isinstance(timeline[-1][1], RunFinished)
    replayed = [e for _, e in timeline if isinstance(e, IntervalUpdate)]
    original = [e for e in run.events if isinstance(e, IntervalUpdate)]
    assert [(e.phase, e.index, e.elapsed) for e in replayed] == [
        (e.phase, e.index, e.elapsed) for e in original
    ]
    for new, old in zip(replayed, original, strict=True):
        assert new.total == old.total
        assert new.ops == old.ops
        assert new.phase_summary == old.phase_summary  # the engine's phase so far, recomputed
        assert new.verdicts == old.verdicts
        assert new.worker_lag_ms == old.worker_lag_ms  # each worker's loop lag, not only the max
    assert replayed[0].worker_lag_ms == {0: 1.5, 1: 2.5}
    kinds = [e.kind for _, e in timeline if hasattr(e, "kind")]
    assert kinds == ["worker"]
    phases = [e.phase for _, e in timeline if isinstance(e, PhaseChanged)]
    assert phases == ["warmup", "sustain"]


def test_a_replayed_model_equals_the_live_one() -> None:
    run = scripted_run(SCRIPT)
    live, replay = RunModel(), RunModel()
    for event in run.events:
        live.apply(event)
    for _, event in replay_timeline(scripted_snapshot(SCRIPT)):
        replay.apply(event)
    a, b = live.view(), replay.view()
    assert a.ops == b.ops
    assert a.total == b.total
    assert a.throughput == b.throughput
    assert a.thresholds == b.thresholds
    assert a.worker_lag_ms == b.worker_lag_ms == {0: 1.5}  # worker 1 crashed at 6 s


async def play(source: ReplaySource, steps: list[tuple[str, float]]) -> list[Event]:
    """Run the replay, apply ``steps`` once it is idle, return what it emitted."""
    emitted: list[Event] = []
    task = asyncio.create_task(source.run(emitted.append))
    try:
        for _ in range(2000):  # the timeline is computed in a thread first
            if source.ready:
                break
            await asyncio.sleep(0.01)
        for command, value in steps:
            for _ in range(500):
                await asyncio.sleep(0.01)
                if source.paused or source.position >= source.end:
                    break
            getattr(source, command)(*([value] if command in ("seek", "set_speed") else []))
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return emitted


@pytest.mark.anyio
async def test_replay_plays_to_the_end_then_seeks_back() -> None:
    snapshot = scripted_snapshot(Script())
    source = ReplaySource(snapshot, speed=1000.0)
    emitted = await play(source, [("pause", 0.0), ("seek", -100.0)])
    finished = [i for i, e in enumerate(emitted) if isinstance(e, RunFinished)]
    assert len(finished) == 1
    again = emitted[finished[0] + 1 :]
    # Seeking back to 0 restarts the picture: RunStarted and what happens at t=0 only.
    assert isinstance(again[0], RunStarted)
    assert not any(isinstance(e, IntervalUpdate | ResourceSample) for e in again)
    assert source.position == 0.0


@pytest.mark.anyio
async def test_paused_replay_moves_only_by_seeking() -> None:
    snapshot = scripted_snapshot(Script())
    source = ReplaySource(snapshot, speed=1.0)
    source.pause()
    emitted = await play(source, [("seek", 5.0)])
    intervals = [e for e in emitted if isinstance(e, IntervalUpdate)]
    assert [e.elapsed for e in intervals] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert not any(isinstance(e, RunFinished) for e in emitted)


def test_baseline_takes_the_sustain_figures() -> None:
    snapshot = scripted_snapshot(Script(rate=800.0))
    baseline = Baseline.from_snapshot(snapshot)
    sustain = snapshot.report.phases["sustain"]
    assert baseline.throughput["total"] == sustain.total.throughput
    assert baseline.figures("get", corrected=True) == to_plain(sustain.ops["get"].latency_us)
    assert baseline.figures("get", corrected=False) == to_plain(
        sustain.ops["get"].latency_uncorrected_us
    )
    ends = baseline.times
    total = baseline.curves["throughput"]["total"]
    at = baseline.curve_at((ends[0], ends[3], ends[-1] + 5))
    assert at[:2] == (total[0], total[3])
    assert math.isnan(at[2])  # past its end: no line
    assert total[3] == pytest.approx(
        sum(baseline.curves["throughput"][op][3] for op in ("get", "post"))
    )
