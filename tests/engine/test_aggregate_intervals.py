"""Each interval event carries its phase so far and the verdicts so far, computed by the
same code as the final report: the last interval of a phase agrees with the report."""

from __future__ import annotations

from protobench.engine.aggregate import Aggregator
from protobench.engine.events import IntervalUpdate
from protobench.engine.metrics import OpRecorder, decode
from protobench.engine.report import RunJudge, build_report
from protobench.engine.report_model import WorkerEntry
from protobench.engine.resource_log import ResourceLog
from protobench.targets.base import Announcement
from tests.support.report_frames import frame, plan_of

PLAN = plan_of({"read": 2, "write": 1}, ("p99 < 5ms", "error_rate < 1%"))
FRAMES = [
    frame("warmup", 0, 0.0, 1.0, {"read": {"ok": 40}, "write": {"ok": 5}}),
    frame("sustain", 0, 0.0, 1.0, {"read": {"ok": 100}, "write": {"errors": 3}}),
    frame("sustain", 1, 1.0, 2.0, {"read": {"ok": 90, "latency_ns": 9_000_000}, "write": {}}),
]


def _run(judged: bool = True) -> tuple[Aggregator, ResourceLog, list[IntervalUpdate]]:
    resources = ResourceLog()
    aggregator = Aggregator(
        [g.name for g in PLAN.groups],
        False,
        {"warmup": 0.0, "sustain": 1.0, "drain": 3.0},
        sessions={g.name: g.count for g in PLAN.groups},
        judge=RunJudge.of(PLAN, resources) if judged else None,
    )
    aggregator.live = {0}
    updates = [u for f in FRAMES for u in aggregator.add(f)] + aggregator.finish()
    return aggregator, resources, updates


def test_the_phase_so_far_grows_interval_by_interval_and_ends_as_the_reports_phase() -> None:
    aggregator, resources, updates = _run()
    sustain = [u for u in updates if u.phase == "sustain"]
    assert [u.phase_summary.total.ok for u in sustain if u.phase_summary] == [100, 190]
    assert [u.phase_summary.duration_s for u in sustain if u.phase_summary] == [1.0, 2.0]
    report = build_report(
        plan=PLAN,
        aggregator=aggregator,
        announcement=Announcement("http://127.0.0.1:1/", "external", 0),
        resources=resources,
        notices=[],
        workers=[WorkerEntry(worker=0, sessions_opened=3)],
        stop_reason="completed",
        started=0.0,
        target_rss_baseline=None,
        target_rss_peak=None,
    )
    assert sustain[-1].phase_summary == report.phases["sustain"]
    warmup = [u for u in updates if u.phase == "warmup"]
    assert warmup[-1].phase_summary == report.phases["warmup"]
    last = sustain[-1].verdicts
    assert last is not None
    assert last.thresholds == report.thresholds
    assert last.checks == report.verdicts.checks
    assert last.cpu == report.verdicts.cpu
    assert [t.ok for t in last.thresholds] == [False, False]  # p99 9 ms, 3 errors of 193


def test_before_sustain_there_is_nothing_to_judge_and_a_run_without_a_judge_has_no_verdicts() -> (
    None
):
    _, _, updates = _run()
    (warmup,) = [u for u in updates if u.phase == "warmup"]
    assert warmup.verdicts is not None
    assert (warmup.verdicts.thresholds, warmup.verdicts.checks) == ([], [])
    first = next(u for u in updates if u.phase == "sustain").verdicts
    assert first is not None
    # write worked in warmup: only its error rate fails so far
    assert [c.expr for c in first.checks if not c.ok] == ["error_rate[write] < 1.00%"]
    _, _, unjudged = _run(judged=False)
    assert all(u.verdicts is None for u in unjudged)
    assert all(u.phase_summary is not None for u in unjudged)


def _periodic_frame() -> dict[str, object]:
    """A closed run's sustain interval: ``read`` back-to-back, ``list`` periodic (it records
    from the actual send too, as every scheduled exchange does)."""
    read, listing = OpRecorder("read"), OpRecorder("list")
    read.latencies.extend([1_000_000] * 50)
    listing.latencies.append(9_000_000)
    listing.uncorrected.append(8_000_000)
    ops = {"read": read.flush().to_wire(), "list": listing.flush().to_wire()}
    return {"phase": "sustain", "index": 0, "t0": 0.0, "t1": 1.0, "worker": 0, "ops": ops}


def test_phase_histograms_hold_uncorrected_latencies_only_in_the_open_model() -> None:
    """A closed run's TOTAL uncorrected was its periodic group's curve alone (issue 30)."""
    for corrected in (False, True):
        aggregator = Aggregator(["read", "list"], corrected, {"sustain": 0.0})
        aggregator.live = {0}
        aggregator.add(_periodic_frame())
        aggregator.finish()
        sustain = aggregator.phase_histograms()["sustain"]
        keys = {name: set(hists) for name, hists in sustain.items()}
        if corrected:
            assert keys == {
                "read": {"hist", "hist_uncorrected"},
                "list": {"hist", "hist_uncorrected"},
            }
            assert decode(sustain["list"]["hist_uncorrected"]).get_total_count() == 1
        else:
            assert keys == {"read": {"hist"}, "list": {"hist"}}
            assert aggregator.phase_report("sustain").total.latency_uncorrected_us is None
