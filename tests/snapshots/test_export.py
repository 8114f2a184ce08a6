"""Exports: the .hlog reads back with hdrh's own log reader, the CSV and JSON hold the series."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from protobench.engine.metrics import decode, new_histogram, summary
from protobench.engine.report_model import to_plain
from protobench.snapshots.export import CSV_COLUMNS, export, tag_of, write_csv, write_hlog
from protobench.snapshots.hgrm import percentile_distribution
from protobench.snapshots.series import TOTAL
from tests.support.snapshots import OpSpec, make_snapshot, typed, typed_snapshot

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
        lines = write_hlog(typed(snapshot), out)
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
        write_hlog(typed(snapshot), out, phase="all")
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
        assert write_hlog(typed(snapshot), out) == 12 * 3 * 2
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


# What HdrHistogram's (Java) outputPercentileDistribution(out, 5, 1000.0) prints for 1..10 ms
# and 250 ms: values at their highest equivalent (3001 µs for 3000 at this magnitude), ticks
# 10% apart in the first half, 5% in the next quarter... (wrk2's 1/(1-p) column: 1.11, 1.25...).
KNOWN_HGRM = """\
       Value     Percentile TotalCount 1/(1-Percentile)

       1.000 0.000000000000          1           1.00
       2.000 0.100000000000          2           1.11
       3.001 0.200000000000          3           1.25
       4.001 0.300000000000          4           1.43
       5.003 0.400000000000          5           1.67
       6.003 0.500000000000          6           2.00
       7.003 0.550000000000          7           2.22
       7.003 0.600000000000          7           2.50
       8.003 0.650000000000          8           2.86
       8.003 0.700000000000          8           3.33
       9.007 0.750000000000          9           4.00
       9.007 0.775000000000          9           4.44
       9.007 0.800000000000          9           5.00
      10.007 0.825000000000         10           5.71
      10.007 0.850000000000         10           6.67
      10.007 0.875000000000         10           8.00
      10.007 0.887500000000         10           8.89
      10.007 0.900000000000         10          10.00
     250.111 0.912500000000         11          11.43
     250.111 1.000000000000         11
#[Mean    =       27.733, StdDeviation   =       70.355]
#[Max     =      250.111, Total count    =           11]
#[Buckets =           16, SubBuckets     =         2048]
"""


def test_percentile_distribution_is_hdrhistograms_text() -> None:
    hist = new_histogram()
    for ms in [*range(1, 11), 250]:
        hist.record_value(ms * 1000)
    out = io.StringIO()
    percentile_distribution(hist, out)
    assert out.getvalue() == KNOWN_HGRM


def test_percentile_distribution_of_many_values_steps_like_wrk2() -> None:
    hist = new_histogram()
    for us in range(1, 100_001):
        hist.record_value(us)
    out = io.StringIO()
    percentile_distribution(hist, out)
    rows = [line.split() for line in out.getvalue().splitlines()[2:-3]]
    inverse = [row[3] for row in rows[:-1]]
    # wrk2's README spectrum has the same 1/(1-p) ticks
    assert inverse[:8] == ["1.00", "1.11", "1.25", "1.43", "1.67", "2.00", "2.22", "2.50"]
    assert inverse[-6:] == ["1706.67", "2048.00", "2275.56", "2560.00", "2925.71", "3413.33"]
    assert rows[-1][1:] == ["1.000000000000", "100000"]
    assert len(rows[-1]) == 3
    assert float(rows[-1][0]) == hist.get_max_value() / 1000.0


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith("# op: "):
            name = line.removeprefix("# op: ")
            sections[name] = []
        elif name and line:
            sections[name].append(line)
    return sections


def test_hgrm_export_has_every_op_corrected_and_uncorrected() -> None:
    snapshot = make_snapshot(OPS, seed=7, open_model=True)
    out = io.StringIO()
    export(typed(snapshot), "hgrm", out)
    text = out.getvalue()
    assert "values in milliseconds" in text.splitlines()[1]
    sections = _sections(text)
    corrected, uncorrected = "corrected", "uncorrected"
    assert list(sections) == [
        f"{op}, {kind}" for kind in (corrected, uncorrected) for op in (TOTAL, "get", "post item")
    ]
    sustain = snapshot["report"]["phases"]["sustain"]
    for op, figures in [(TOTAL, sustain["total"]), ("get", sustain["ops"]["get"])]:
        for kind, key in ((corrected, "latency_us"), (uncorrected, "latency_uncorrected_us")):
            lines = sections[f"{op}, {kind}"]
            assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
            footer = re.fullmatch(r"#\[Max += +([\d.]+), Total count += +(\d+)\]", lines[-2])
            assert footer is not None
            peak, count = footer.groups()
            assert int(count) == figures["ok"]
            assert float(peak) == pytest.approx(figures[key]["max"] / 1000.0, abs=0.0005)
            median = next(row.split() for row in lines[1:] if row.split()[1] == "0.500000000000")
            assert float(median[0]) == pytest.approx(figures[key]["p50"] / 1000.0, abs=0.0005)


def test_hgrm_of_a_closed_model_run_has_one_kind() -> None:
    out = io.StringIO()
    export(typed_snapshot(OPS, seed=7), "hgrm", out, phase="all")
    assert list(_sections(out.getvalue())) == [
        f"{op}, latency" for op in (TOTAL, "get", "post item")
    ]
    assert "phase all" in out.getvalue().splitlines()[0]
    footer = next(line for line in out.getvalue().splitlines() if "Total count" in line)
    phases = make_snapshot(OPS, seed=7)["report"]["phases"]
    assert int(footer.split("=")[-1].rstrip("]")) == sum(p["total"]["ok"] for p in phases.values())


def test_hgrm_writes_a_total_uncorrected_only_when_every_op_has_one() -> None:
    """An open run's stream has no send of its own; a closed run's periodic group kept one in
    snapshots of that time: neither is a run's uncorrected TOTAL (issue 30)."""
    stream = make_snapshot(OPS, seed=7, open_model=True)
    del stream["histograms"]["sustain"]["post item"]["hist_uncorrected"]
    out = io.StringIO()
    export(typed(stream), "hgrm", out)
    assert list(_sections(out.getvalue())) == [
        f"{TOTAL}, corrected",
        "get, corrected",
        "post item, corrected",
        "get, uncorrected",
    ]
    closed = make_snapshot(OPS, seed=7)
    closed["histograms"]["sustain"]["post item"]["hist_uncorrected"] = "x"  # never decoded
    out = io.StringIO()
    export(typed(closed), "hgrm", out)
    assert "uncorrected" not in out.getvalue()


def test_csv_has_absolute_times_p95_uncorrected_latencies_and_counters() -> None:
    snapshot = make_snapshot(OPS, seed=7, open_model=True)
    out = io.StringIO()
    write_csv(typed(snapshot), out)
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
    write_csv(typed_snapshot(OPS, seed=7), closed)
    assert {r["uncorrected_p50_us"] for r in csv.DictReader(io.StringIO(closed.getvalue()))} == {""}


def test_tags_have_no_separators() -> None:
    assert tag_of("read property, fast=1") == "read_property__fast_1"


def test_csv_has_one_row_per_interval_and_operation_and_a_total() -> None:
    snapshot = make_snapshot(OPS, seed=7)
    out = io.StringIO()
    assert write_csv(typed(snapshot), out) == 12 * 3
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


def test_json_export_is_the_snapshot_as_read_back() -> None:
    snapshot = make_snapshot(seed=7)
    out = io.StringIO()
    export(typed(snapshot), "json", out)
    exported = json.loads(out.getvalue())
    assert exported == json.loads(json.dumps(to_plain(typed(snapshot))))
    # an older report gains the defaults of the keys added since; the rest is the file's
    assert {k: v for k, v in exported.items() if k != "report"} == {
        k: v for k, v in snapshot.items() if k != "report"
    }


def test_unknown_format_or_phase() -> None:
    snapshot = make_snapshot(seed=7)
    with pytest.raises(ValueError, match="unknown format"):
        export(typed(snapshot), "xml", io.StringIO())
    with pytest.raises(ValueError, match="unknown phase"):
        export(typed(snapshot), "csv", io.StringIO(), phase="cooldown")
