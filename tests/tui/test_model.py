"""The monitor's model against known truth: the engine's own merged histograms and report."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

import numpy as np
import pytest

from protobench.engine.aggregate import Aggregator
from protobench.engine.events import IntervalUpdate, Notice, ResourceSample, RunFinished
from protobench.engine.metrics import OpRecorder, counts_view, merge, summary
from protobench.engine.report_model import to_plain
from protobench.tui.display import Display
from protobench.tui.feed import Feed
from protobench.tui.latency import Window, counts_of, distribution
from protobench.tui.messages import NoticeShown, RunEnded, ViewUpdated
from protobench.tui.model import RunModel
from protobench.tui.timeline import replay_timeline
from protobench.tui.view import is_alert
from protobench.tui.widgets.verdict_banner import VerdictBanner
from tests.support.pilot import text_of
from tests.support.scripted_run import Script, scripted_run, scripted_snapshot


def fold_all(script: Script, upto: type | None = RunFinished) -> tuple[RunModel, list[Notice]]:
    run = scripted_run(script)
    model = RunModel()
    alerts: list[Notice] = []
    for event in run.events:
        if upto is not None and isinstance(event, upto):
            break
        alerts.extend(model.apply(event))
    return model, alerts


@pytest.mark.parametrize("script", [Script(), Script(rate=800.0), Script(crash_at=6.0)])
def test_phase_percentiles_equal_the_reports(script: Script) -> None:
    run = scripted_run(script)
    model, _ = fold_all(script)
    view = model.view()
    sustain = run.report.phases["sustain"]
    assert view.measured_phase == "sustain"
    for op in view.ops:
        expected = to_plain(sustain.ops[op.name].latency_us)
        assert op.latency["phase"] == expected
        assert op.ok == sustain.ops[op.name].ok
        assert op.errors == sustain.ops[op.name].errors
        if script.rate is not None:
            unc = to_plain(sustain.ops[op.name].latency_uncorrected_us)
            assert op.latency["phase_uncorrected"] == unc
    assert view.total is not None
    assert view.total.latency["phase"] == to_plain(sustain.total.latency_us)


def test_window_percentiles_are_the_merge_of_the_last_ten_intervals() -> None:
    script = Script(warmup=2.0, duration=14.0)
    run = scripted_run(script)
    model, _ = fold_all(script)
    intervals = [e for e in run.events if isinstance(e, IntervalUpdate) and e.phase != "drain"]
    last = intervals[-10:]
    for name in script.ops:
        expected = summary(merge([e.ops[name].hist or "" for e in last]))
        got = next(op for op in model.view().ops if op.name == name)
        assert got.latency["window"] == (expected)
        ok = sum(e.ops[name].ok for e in last)
        assert got.throughput == pytest.approx(ok / sum(e.duration for e in last))


def test_live_thresholds_and_verdict_match_the_final_report() -> None:
    script = Script(thresholds=("p99 < 20ms", "p50 < 100us", "error_rate < 1%"))
    run = scripted_run(script)
    model, _ = fold_all(script)
    live = model.view().thresholds
    final = run.report.thresholds
    assert [(t.expr, t.ok) for t in live] == [(t.expr, t.ok) for t in final]
    for state, expected in zip(live, final, strict=True):
        assert state.value == pytest.approx(expected.value, rel=1e-5, abs=1e-6)  # rounded
    assert model.view().generator_bound == run.report.verdicts.generator_bound


def test_thresholds_wait_for_the_sustain_phase() -> None:
    run = scripted_run(Script())
    model = RunModel()
    for event in run.events[:4]:  # started, warmup, first interval and sample
        model.apply(event)
    assert [t.ok for t in model.view().thresholds] == [None, None]


def test_crash_dead_target_pause_and_rate_are_noticed() -> None:
    model, alerts = fold_all(Script(crash_at=4.0, target_dies_at=9.0))
    assert [(a.kind, is_alert(a)) for a in alerts] == [("worker", True), ("target", True)]
    assert is_alert(Notice("sessions", "no session could open in 5 s (...); stopped early", 5.0))
    view = model.view()
    assert view.resources is not None
    assert view.resources.target_gone
    model.apply(Notice("pause", "load paused", 10.0))
    assert model.view().paused
    model.apply(Notice("rate", "rate set", 10.5, {"factor": 1.3}))
    model.apply(Notice("resume", "load resumed", 11.0))
    assert not model.view().paused
    assert model.view().rate_factor == 1.3


def test_the_end_brings_the_report_and_its_verdicts() -> None:
    run = scripted_run(Script())
    model = RunModel()
    for event in run.events:
        model.apply(event)
    view = model.view()
    assert view.state == "finished"
    assert view.report is run.report
    assert view.exit_code == 0
    assert view.snapshot == ".protobench/snapshots/scripted.json.gz"


def test_window_adds_and_subtracts_exactly() -> None:
    run = scripted_run(Script())
    hists = [e.ops["get"].hist or "" for e in run.events if isinstance(e, IntervalUpdate)][:6]
    window = Window(3)
    for encoded in hists:
        window.push(counts_of(encoded))
    window.push(None)
    assert np.array_equal(window.counts, counts_view(merge(hists[4:6])))


def test_distribution_covers_every_value() -> None:
    run = scripted_run(Script())
    encoded = [e.ops["get"].hist or "" for e in run.events if isinstance(e, IntervalUpdate)][2]
    counts = counts_of(encoded)
    assert counts is not None
    bins = distribution(counts, bins=10)
    assert len(bins) == 10
    assert sum(n for _, _, n in bins) == int(counts.sum())
    assert all(low < high for low, high, _ in bins)
    assert all(a[1] == pytest.approx(b[0]) for a, b in itertools.pairwise(bins))


def test_feed_throttles_views_and_never_drops_the_end() -> None:
    run = scripted_run(Script())
    posted: list[object] = []

    async def feed_all() -> Feed:
        feed = Feed(posted.append, refresh=60.0)
        for event in run.events:
            feed(event)
        return feed

    feed = asyncio.run(feed_all())
    views = [m for m in posted if isinstance(m, ViewUpdated)]
    intervals = sum(isinstance(e, IntervalUpdate | ResourceSample) for e in run.events)
    # Start, phases and the end post at once; the ~30 intervals and samples are throttled.
    assert len(views) == feed.views < intervals
    assert isinstance(posted[-1], RunEnded)
    assert isinstance(posted[-2], ViewUpdated)
    assert posted[-2].view.state == "finished"
    assert not [m for m in posted if isinstance(m, NoticeShown)]


def test_a_stopped_run_drains_at_the_stop_not_at_the_planned_end() -> None:
    script = Script(warmup=2.0, duration=30.0, stop_at=3.0)
    run = scripted_run(script)
    model = RunModel()
    for event in run.events[:-1]:
        model.apply(event)
    drained = []
    for worker in range(script.workers):
        frame = {"worker": worker, "phase": "drain", "index": 0, "t0": 0.0, "t1": 0.2, "ops": {}}
        drained.extend(run.aggregator.add(frame))
    (drain,) = drained
    assert drain.elapsed == pytest.approx(3.2)  # the stop at 3.0 s, then 0.2 s of drain
    model.apply(drain)
    assert model.view().elapsed == pytest.approx(3.2)  # not 32.2: the header shows 0:03 / 0:32


def test_the_total_shows_no_latency_across_ops_of_different_kinds() -> None:
    script = Script(duration=3.0)
    run = scripted_run(script)
    offsets = {"warmup": 0.0, "sustain": 2.0, "drain": 5.0}
    kinds = {"get": "local_write", "post": "one_way"}
    aggregator = Aggregator(list(script.ops), False, offsets, kinds=kinds)
    aggregator.live = {0}
    model = RunModel()
    model.apply(run.events[0])
    recorder = OpRecorder("get")
    recorder.latencies.append(5_000)
    frame = {"worker": 0, "phase": "sustain", "index": 0, "t0": 0.0, "t1": 1.0}
    for update in aggregator.add({**frame, "ops": {"get": recorder.flush().to_wire()}}):
        model.apply(update)
    view = model.view()
    assert next(op for op in view.ops if op.name == "get").latency["window"]["count"] == 1
    assert view.total is not None
    assert view.total.latency["window"] == {"count": 0}
    assert [op.latency_kind for op in view.ops] == ["local_write", "one_way"]
    assert view.total.latency_kind == "mixed"


def test_a_host_busy_with_other_processes_is_shown_with_its_figures() -> None:
    # The host full: our workers 8% and the target 36% of its two cores.
    model, _ = fold_all(Script(duration=4.0, worker_cpu=3.0, host_cpu=99.0))
    view = model.view()
    assert view.host_saturated
    assert not view.generator_bound
    assert view.host_reason is not None
    assert "our workers 8%, target 36%, others 55% of its 2 cores" in view.host_reason
    banner = text_of(VerdictBanner().render_display(Display(view)))
    assert "HOST-SATURATED" in banner


def test_a_gone_target_is_the_engines_notice_alone_once_live_and_in_replay() -> None:
    script = Script(target_dies_at=9.0)
    _, alerts = fold_all(script)
    assert [(a.kind, a.details) for a in alerts] == [("target", {"pid": 4000})]
    replayed = RunModel()
    alerts = []
    for _, event in replay_timeline(scripted_snapshot(script)):
        alerts.extend(replayed.apply(event))
    assert [(a.kind, a.details) for a in alerts] == [("target", {"pid": 4000})]
    view = replayed.view()
    assert view.resources is not None
    assert view.resources.target_gone
    silent = RunModel()  # samples without the target but no notice: the monitor adds none
    for event in scripted_run(script).events:
        if not isinstance(event, Notice):
            assert silent.apply(event) == []


def test_the_first_interval_is_shown_at_once_even_right_after_the_start() -> None:
    """An early-started run hands the monitor its start and first interval together."""
    run = scripted_run(Script())
    first = next(i for i, e in enumerate(run.events) if isinstance(e, IntervalUpdate))
    posted: list[object] = []

    async def feed_until_the_first_interval() -> None:
        feed = Feed(posted.append, refresh=60.0)
        for event in run.events[: first + 2]:  # the next interval waits for the refresh
            feed(event)

    asyncio.run(feed_until_the_first_interval())
    views = [m.view for m in posted if isinstance(m, ViewUpdated)]
    assert [v.measured_phase for v in views][-1] == "warmup"
    assert len(views[-1].times) == 1


def test_a_short_last_interval_is_merged_into_the_point_before_it_not_drawn_as_a_drop() -> None:
    """Issue 30: a run stopped 0.3 s into an interval, whose last interval also lost most of
    its completions (a worker's report cut short), showed that interval as a real drop
    (the legend said a quarter of the run's rate). A point shorter than half an interval is
    merged into the one before it, weighted by time."""
    run = scripted_run(Script(stop_at=9.3))
    events = list(run.events)
    sustain = [e for e in events if isinstance(e, IntervalUpdate) and e.phase == "sustain"]
    before, last = sustain[-2], sustain[-1]
    assert last.duration == pytest.approx(0.3)
    ops = {name: replace(op, ok=op.ok // 4) for name, op in last.ops.items()}
    total = replace(last.total, ok=sum(op.ok for op in ops.values()))
    events[events.index(last)] = replace(last, ops=ops, total=total)
    model = RunModel()
    for event in events:
        model.apply(event)
    view = model.view()
    assert view.times[-1] == last.elapsed
    assert view.times[-2] == before.elapsed - before.duration  # no point of its own before it
    merged = (before.total.ok + total.ok) / (before.duration + last.duration)
    assert view.throughput["total"][-1] == pytest.approx(merged)
    get = (before.ops["get"].ok + ops["get"].ok) / (before.duration + last.duration)
    assert view.throughput["get"][-1] == pytest.approx(get)
    steady = sum(view.throughput["total"][-5:-1]) / 4
    assert view.throughput["total"][-1] > 0.7 * steady  # not the quarter the cut interval had
    assert len(view.latency_history["total"]["p99"]) == len(view.times)
    assert all(len(line) == len(view.times) for line in view.error_code_history["total"].values())


def test_latency_and_error_code_histories_are_the_intervals_figures() -> None:
    model, _ = fold_all(Script(rate=800.0))
    view = model.view()
    run = scripted_run(Script(rate=800.0))
    measured = [e for e in run.events if isinstance(e, IntervalUpdate) and e.phase != "drain"]
    assert view.latency_history["get"]["p99"] == tuple(
        e.ops["get"].latency_us.p99 for e in measured
    )
    assert view.latency_history["total"]["p999_uncorrected"] == tuple(
        e.total.latency_uncorrected_us.p999 for e in measured if e.total.latency_uncorrected_us
    )
    codes = view.error_code_history["total"]
    assert set(codes) == {"protocol:503", "timeout"}  # a class without a code under its name
    assert sum(codes["protocol:503"]) == pytest.approx(
        sum(e.total.error_codes.get("protocol:503", 0) / e.duration for e in measured)
    )
