"""What the report's view reads from a snapshot: series, TOTAL, spectra, offered rate, text."""

from __future__ import annotations

import pytest

from protobench.engine.metrics import decode, merge, summary
from protobench.htmlreport.view import (
    Mark,
    run_view,
    spectrum_points,
    text,
)
from protobench.snapshots.series import TOTAL, intervals
from tests.support.html_snapshot import DELAY, NEW_COUNTERS, RATE, report_snapshot
from tests.support.snapshots import OpSpec, make_snapshot, typed


def test_marks_pauses_rate_changes_and_notices() -> None:
    view = run_view(typed(report_snapshot()))
    assert Mark("phase", 0.0, 0.5, "warmup") in view.marks
    assert Mark("pause", 1.0, 1.5, "paused") in view.marks
    assert Mark("rate", 2.0, None, "rate set to 4000/s") in view.marks
    assert Mark("notice", 2.5, None, "worker 1 exited with code 1") in view.marks


def test_counters_and_error_codes_unknown_to_the_report_are_series() -> None:
    view = run_view(typed(report_snapshot()))
    ops = {op.name: op for op in view.ops}
    assert [op.name for op in view.ops] == [TOTAL, "get", "put"]
    assert set(ops["get"].counters) == set(NEW_COUNTERS)
    # 2500 per 0.25 s interval
    assert ops["get"].counters["down_us"][-1] == pytest.approx(10_000.0)
    assert ops[TOTAL].counters["connect_failed"][-1] == pytest.approx(4.0)
    # every timeout has the code "slow": the code once, not the class beside it
    assert set(ops["get"].errors) == {"timeout:slow"}
    assert ops["get"].errors["timeout:slow"] == pytest.approx(ops["get"].error_rate)
    assert ops["put"].errors == {}


def test_errors_without_a_code_stay_under_their_class() -> None:
    snapshot = report_snapshot()
    for record in snapshot["series"]:
        figures = record["ops"]["get"]
        figures["errors_by_class"] = {"timeout": figures["errors"] + 2, "closed": 1}
    get = run_view(typed(snapshot)).ops[1]
    assert set(get.errors) == {"timeout:slow", "timeout", "closed"}
    assert get.errors["timeout"][0] * 0.25 == pytest.approx(2)
    assert get.errors["closed"][0] * 0.25 == pytest.approx(1)


def test_series_follow_the_intervals() -> None:
    snapshot = report_snapshot()
    view = run_view(typed(snapshot))
    get = next(op for op in view.ops if op.name == "get")
    records = snapshot["series"]
    assert get.t == [r["elapsed"] for r in records]
    assert get.t0 == pytest.approx([r["elapsed"] - r["duration"] for r in records])
    first = records[0]["ops"]["get"]
    assert get.ok_rate[0] == pytest.approx(first["ok"] / records[0]["duration"])
    assert get.latency["p99"][0] == first["latency_us"]["p99"]
    assert view.left_out == ""


def test_a_partial_last_interval_is_left_out_of_the_time_series_and_said_so() -> None:
    snapshot = report_snapshot(last_interval_fraction=0.4)
    view = run_view(typed(snapshot))
    whole = [r["elapsed"] for r in snapshot["series"]][:-1]
    assert all(op.t == whole for op in view.ops)
    assert view.left_out.startswith("1 partial interval is left out of the time charts")
    # the tables keep it: the report's figures are the whole phase's
    assert view.summary[0]["ok"] == f"{snapshot['report']['phases']['sustain']['total']['ok']:,}"


def test_total_is_the_merge_of_every_operation_corrected_and_uncorrected() -> None:
    snapshot = report_snapshot()
    view = run_view(typed(snapshot))
    hists = snapshot["histograms"]["sustain"]
    total, get, put = view.spectra
    assert total.name == TOTAL
    corrected = merge([item["hist"] for item in hists.values()])
    uncorrected = merge([item["hist_uncorrected"] for item in hists.values()])
    assert corrected.get_total_count() == sum(
        merge([h["hist"]]).get_total_count() for h in hists.values()
    )
    assert uncorrected.get_total_count() == corrected.get_total_count()
    assert total.corrected == spectrum_points(corrected)
    assert total.uncorrected == spectrum_points(uncorrected)
    assert total.uncorrected != total.corrected  # recorded at 60%: another curve
    assert get.uncorrected == spectrum_points(merge([hists["get"]["hist_uncorrected"]]))
    assert put.corrected == spectrum_points(merge([hists["put"]["hist"]]))
    assert total.corrected[0][0] == 0.0
    assert total.corrected[-1][0] == pytest.approx(99.999)
    assert total.corrected[-1][1] == corrected.get_value_at_percentile(99.999)


def test_totals_per_interval_are_the_merge_of_the_operations() -> None:
    snapshot = typed(report_snapshot())
    view = run_view(snapshot)
    for index, item in enumerate(intervals(snapshot, phase=None)):
        hists = [item.ops[name].hist or "" for name in ("get", "put")]
        merged = merge(hists)
        assert view.ops[0].latency["p99"][index] == merged.get_value_at_percentile(99.0)
        ok = sum(item.ops[name].ok for name in ("get", "put"))
        assert view.ops[0].ok_rate[index] == pytest.approx(ok / item.duration)


def test_a_closed_runs_periodic_group_gives_no_uncorrected_total() -> None:
    """Snapshots written before the engine kept hist_uncorrected to the open model hold a
    closed run's periodic group's: the TOTAL was that group's curve alone."""
    snapshot = make_snapshot({"read": OpSpec(), "object-list": OpSpec(rate=2.0)})
    sustain = snapshot["histograms"]["sustain"]
    sustain["object-list"]["hist_uncorrected"] = sustain["object-list"]["hist"]
    sustain["read"]["hist_uncorrected"] = ""
    spectra = run_view(typed(snapshot)).spectra
    assert [s.name for s in spectra] == [TOTAL, "read", "object-list"]
    assert all(s.uncorrected is None for s in spectra)
    total = merge([item["hist"] for item in sustain.values()])
    assert spectra[0].corrected == spectrum_points(total)


def test_an_open_run_whose_stream_has_no_send_has_no_uncorrected_total() -> None:
    snapshot = report_snapshot()
    del snapshot["histograms"]["sustain"]["put"]["hist_uncorrected"]  # deliveries of a stream
    total, get, put = run_view(typed(snapshot)).spectra
    assert total.corrected
    assert total.uncorrected is None
    assert get.uncorrected is not None
    assert put.uncorrected is None


def test_latencies_of_different_kinds_have_no_total_spectrum() -> None:
    snapshot = report_snapshot()
    sustain = snapshot["report"]["phases"]["sustain"]
    sustain["total"]["latency_kind"] = "mixed"
    sustain["ops"]["put"]["latency_kind"] = "delivery"
    total, get, _ = run_view(typed(snapshot)).spectra
    assert total.corrected == []
    assert total.uncorrected is None
    assert total.note == (
        "latencies of different kinds (delivery, round_trip) are not merged: see each operation"
    )
    assert get.corrected


def test_the_open_models_offered_rate_follows_pauses_and_rate_changes() -> None:
    view = run_view(typed(report_snapshot()))
    total, get, put = view.ops
    assert total.offered is not None
    assert get.offered is not None
    by_end = dict(zip(total.t, total.offered, strict=True))
    assert by_end[1.0] == pytest.approx(RATE)  # (0.75, 1.0]
    assert by_end[1.25] == 0.0  # paused from 1.0 to 1.5
    assert by_end[1.75] == pytest.approx(RATE)
    assert by_end[2.25] == pytest.approx(2 * RATE)  # the rate doubled at 2.0
    assert get.offered == pytest.approx([v / 2 for v in total.offered])  # one session each
    assert put.offered == get.offered


def test_the_offered_rate_ramps_and_a_periodic_group_asks_count_per_every() -> None:
    snapshot = report_snapshot()
    snapshot["plan"]["ramp_to"] = 3 * RATE  # over warmup and sustain: 3.5 s
    snapshot["plan"]["groups"][1].update({"every": 0.5, "count": 2})
    snapshot["report"]["notices"] = []
    _, get, put = run_view(typed(snapshot)).ops
    assert put.offered == pytest.approx([4.0] * len(put.t))  # 2 sessions, one each 0.5 s
    for start, end, offered in zip(get.t0, get.t, get.offered or [], strict=True):
        mid = (start + end) / 2
        assert offered == pytest.approx(RATE + 2 * RATE * mid / 3.5)  # get has it all


def test_a_closed_run_has_no_offered_rate() -> None:
    view = run_view(typed(make_snapshot()))
    assert all(op.offered is None for op in view.ops)


def test_values_read_as_text_not_json_nor_python() -> None:
    assert text(True) == "yes"
    assert text(False) == "no"
    assert text(None) == "-"
    assert text([]) == "-"
    assert text(["a", 1, 2.5]) == "a, 1, 2.5"
    assert text({"lost": 0, "reconnects": 2}) == "lost=0, reconnects=2"
    assert text("http://u:pw@127.0.0.1/") == "http://u:<secret>@127.0.0.1/"


def test_provenance_lists_and_mappings_are_flattened() -> None:
    snapshot = report_snapshot()
    snapshot["labels"] = {"build": {"sha": "abc", "tags": ["x", "y"]}, "ok": True}
    rows = dict(run_view(typed(snapshot)).provenance)
    assert rows["labels.build.sha"] == "abc"
    assert rows["labels.build.tags"] == "x, y"
    assert rows["labels.ok"] == "yes"
    assert all("{" not in value and "[" not in value for value in rows.values())


def test_resources_per_worker_target_and_host() -> None:
    res = run_view(typed(report_snapshot())).resources
    assert list(res.worker_cpu) == ["worker pid 101", "worker pid 102"]
    assert res.worker_cpu["worker pid 101"][2] == 42.0
    assert set(res.target) == {"cpu", "rss", "fds"}
    assert set(res.host) == {"cpu", "mem_used"}


def test_a_server_sending_many_codes_makes_a_chart_of_the_most_and_the_rest() -> None:
    snapshot = report_snapshot()
    for record in snapshot["series"]:
        figures = record["ops"]["get"]
        codes = {f"protocol:{n}": n + 1 for n in range(500)}
        figures["errors_by_class"] = {"protocol": sum(codes.values())}
        figures["error_codes"] = codes
    get = run_view(typed(snapshot)).ops[1]
    assert list(get.errors) == [f"protocol:{n}" for n in range(499, 492, -1)] + ["493 other codes"]
    per_interval = sum(range(1, 494)) / 0.25
    assert get.errors["493 other codes"] == pytest.approx([per_interval] * len(get.t))


def test_the_generator_delay_is_drawn_apart_where_the_kernel_clock_measured_it() -> None:
    snapshot = report_snapshot()
    view = run_view(typed(snapshot))
    total, get, put = view.ops
    assert get.delay is not None
    assert get.delay["p99"] == [summary(decode(DELAY))["p99"]] * len(get.t)
    assert total.delay is not None  # the interval's TOTAL merges get's
    assert put.delay is None
    spectra = {item.name: item for item in view.spectra}
    assert spectra["get"].delay == spectrum_points(merge([DELAY]))
    assert spectra[TOTAL].delay == spectra["get"].delay
    assert spectra["put"].delay is None
    assert ("", "kernel clock (send: user)") in view.facts


def test_a_notice_of_the_whole_run_is_no_mark() -> None:
    snapshot = report_snapshot()
    clock = "the mqtt plugin does not read the kernel's timestamps"
    snapshot["report"]["notices"].append({"kind": "clock", "message": clock, "elapsed": 0.01})
    view = run_view(typed(snapshot))
    assert all(mark.label != clock for mark in view.marks)
    assert f"0.0 s clock: {clock}" in view.notices
