"""Exports: the .hlog reads back with hdrh's own log reader, the CSV and JSON hold the series."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from protobench.engine.metrics import decode, new_histogram, summary
from protobench.snapshots.export import CSV_COLUMNS, export, tag_of, write_csv, write_hlog
from protobench.snapshots.series import TOTAL
from tests.unit.conftest_snapshots import OpSpec, make_snapshot

OPS = {"get": OpSpec(), "post item": OpSpec(rate=500.0, median_us=3000.0, error_rate=0.02)}


def _read_log(path: Path) -> list[HdrHistogram]:
    reader = HistogramLogReader(str(path), new_histogram())
    hists = []
    while (hist := reader.get_next_interval_histogram()) is not None:
        hists.append(hist)
    return hists


def test_hlog_read_back_gives_the_snapshot_percentiles(tmp_path: Path) -> None:
    snapshot = make_snapshot(OPS, seed=7)
    path = tmp_path / "run.hlog"
    with path.open("w") as out:
        lines = write_hlog(snapshot, out)
    assert lines == 12 * 3
    hists = _read_log(path)
    assert len(hists) == 36
    merged: dict[str | None, HdrHistogram] = {}
    for hist in hists:
        merged.setdefault(hist.get_tag(), new_histogram()).add(hist)
    sustain = snapshot["report"]["phases"]["sustain"]
    assert set(merged) == {None, "get", "post_item"}
    assert summary(merged[None]) == sustain["total"]["latency_us"]
    assert summary(merged["get"]) == sustain["ops"]["get"]["latency_us"]
    assert summary(merged["post_item"]) == sustain["ops"]["post item"]["latency_us"]


def test_hlog_timestamps_are_relative_to_the_start_time(tmp_path: Path) -> None:
    snapshot = make_snapshot(OPS, seed=7)
    path = tmp_path / "run.hlog"
    with path.open("w") as out:
        write_hlog(snapshot, out, phase="all")
    text = path.read_text()
    assert text.startswith("#[Histogram log format version 1.3]\n")
    assert "#[StartTime: 1735689600.000 (seconds since epoch)" in text
    assert "#[BaseTime: 1735689600.000000 (seconds since epoch)]" in text
    hists = [h for h in _read_log(path) if h.get_tag() is None]
    # 2 warmup + 12 sustain intervals of 250 ms, back to back from the run's start.
    assert len(hists) == 14
    starts = [h.get_start_time_stamp() / 1000.0 - 1735689600.0 for h in hists]
    assert starts == pytest.approx([i * 0.25 for i in range(14)])
    ends = [h.get_end_time_stamp() / 1000.0 - 1735689600.0 for h in hists]
    assert ends == pytest.approx([(i + 1) * 0.25 for i in range(14)])


def test_hlog_of_an_open_model_run_tags_the_uncorrected_histograms(tmp_path: Path) -> None:
    snapshot = make_snapshot(OPS, seed=7, open_model=True)
    path = tmp_path / "run.hlog"
    with path.open("w") as out:
        assert write_hlog(snapshot, out) == 12 * 3 * 2
    # The README's reading example: one series per tag, summed over the intervals.
    reader = HistogramLogReader(str(path), new_histogram())
    by_tag: dict[str | None, HdrHistogram] = {}
    while (hist := reader.get_next_interval_histogram()) is not None:
        by_tag.setdefault(hist.get_tag(), new_histogram()).add(hist)
    sustain = snapshot["report"]["phases"]["sustain"]
    assert set(by_tag) == {
        None,
        "get",
        "post_item",
        "uncorrected",
        "uncorrected.get",
        "uncorrected.post_item",
    }
    assert summary(by_tag[None]) == sustain["total"]["latency_us"]
    assert summary(by_tag["uncorrected"]) == sustain["total"]["latency_uncorrected_us"]
    get = sustain["ops"]["get"]
    assert summary(by_tag["uncorrected.get"]) == get["latency_uncorrected_us"]
    assert summary(by_tag["get"]) == get["latency_us"]
    assert by_tag[None].get_total_count() == sustain["total"]["ok"]


def test_csv_has_absolute_times_p95_uncorrected_latencies_and_counters() -> None:
    snapshot = make_snapshot(OPS, seed=7, open_model=True)
    out = io.StringIO()
    write_csv(snapshot, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    first, last = rows[0], rows[-1]
    # the run started at 2025-01-01T00:00:00Z; sustain begins after 2 warmup intervals of 250 ms
    assert first["start_time"] == "2025-01-01T00:00:00.500+00:00"
    assert first["end_time"] == "2025-01-01T00:00:00.750+00:00"
    assert float(first["start_epoch"]) == 1735689600.5
    assert float(last["end_epoch"]) == 1735689600.0 + 14 * 0.25
    series = [r for r in snapshot["series"] if r["phase"] == "sustain"]
    get_rows = [r for r in rows if r["op"] == "get"]
    for row, record in zip(get_rows, series, strict=True):
        hist = decode(record["ops"]["get"]["hist"])
        assert float(row["p95_us"]) == hist.get_value_at_percentile(95.0)
        unc = record["ops"]["get"]["latency_uncorrected_us"]
        assert float(row["uncorrected_p99_us"]) == unc["p99"]
        assert float(row["uncorrected_p99_us"]) < float(row["p99_us"])
    # the resource sample nearest each interval's end: the 3rd record of the run is sustain's 1st
    assert [float(r["generator_cpu"]) for r in get_rows[:2]] == [32.0, 33.0]
    assert {(r["target_cpu"], r["target_rss"], r["host_cpu"]) for r in rows} == {
        ("20.0", str(5 << 20), "60.0")
    }
    closed = io.StringIO()
    write_csv(make_snapshot(OPS, seed=7), closed)
    assert {r["uncorrected_p50_us"] for r in csv.DictReader(io.StringIO(closed.getvalue()))} == {""}


def test_tags_have_no_separators() -> None:
    assert tag_of("read property, fast=1") == "read_property__fast_1"


def test_csv_has_one_row_per_interval_and_operation_and_a_total() -> None:
    snapshot = make_snapshot(OPS, seed=7)
    out = io.StringIO()
    assert write_csv(snapshot, out) == 12 * 3
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert tuple(rows[0]) == CSV_COLUMNS
    sustain = snapshot["report"]["phases"]["sustain"]
    for op, figures in [*sustain["ops"].items(), (TOTAL, sustain["total"])]:
        mine = [r for r in rows if r["op"] == op]
        assert len(mine) == 12
        assert sum(int(r["ok"]) for r in mine) == figures["ok"]
        assert sum(int(r["errors"]) for r in mine) == figures["errors"]
    series = [r for r in snapshot["series"] if r["phase"] == "sustain"]
    get_rows = [r for r in rows if r["op"] == "get"]
    assert [float(r["p99_us"]) for r in get_rows] == [
        s["ops"]["get"]["latency_us"]["p99"] for s in series
    ]
    errors = [r["errors_by_class"] for r in rows if r["op"] == "post item" and r["errors"] != "0"]
    assert errors
    assert all(e.startswith("timeout=") for e in errors)


def test_json_export_is_the_snapshot() -> None:
    snapshot = make_snapshot(seed=7)
    out = io.StringIO()
    export(snapshot, "json", out)
    assert json.loads(out.getvalue()) == snapshot


def test_unknown_format_or_phase() -> None:
    snapshot = make_snapshot(seed=7)
    with pytest.raises(ValueError, match="unknown format"):
        export(snapshot, "xml", io.StringIO())
    with pytest.raises(ValueError, match="unknown phase"):
        export(snapshot, "csv", io.StringIO(), phase="cooldown")
