"""The typed interval series: the same bytes as before, old records load, bad ones name the field.

``series_golden.json`` was written by the code before the series was typed
(records as plain dicts), from the payloads of :mod:`tests.support.series_frames`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protobench.engine.metrics import OpInterval, OpRecorder, decode
from protobench.engine.report_model import ReportError, to_plain
from protobench.engine.series_model import SeriesRecord, load_series
from protobench.engine.stats_frame import StatsFrame
from protobench.engine.summaries import OpSummary
from protobench.snapshots.series import (
    TOTAL,
    intervals,
    latency,
    phase_histogram,
)
from tests.support.series_frames import aggregated, payload, series_json
from tests.support.snapshots import make_snapshot, typed

GOLDEN = Path(__file__).parent / "series_golden.json"


def test_the_series_is_written_byte_for_byte_as_before() -> None:
    assert series_json() + "\n" == GOLDEN.read_text()


def test_the_series_holds_typed_records_merged_past_the_limit() -> None:
    series = aggregated().series
    assert all(isinstance(record, SeriesRecord) for record in series)
    sustain = [record for record in series if record.phase == "sustain"]
    assert [record.duration for record in sustain] == [4.0, 2.0, 2.0, 1.0]  # 9 intervals
    assert sustain[0].worker_lag_ms == {0: 3.0, 1: 4.5}  # each worker's worst of the four
    assert sustain[0].lag_ms == 4.5
    assert all(isinstance(op, OpSummary) and op.hist for op in sustain[0].ops.values())


def test_a_stored_series_reads_back_to_the_same_json() -> None:
    data = json.loads(GOLDEN.read_text())
    records = load_series(data)
    assert records == aggregated().series
    assert json.dumps(to_plain(records), separators=(",", ":")) + "\n" == GOLDEN.read_text()


OLD_RECORD: dict[str, Any] = {
    "phase": "sustain",
    "index": 0,
    "elapsed": 2,
    "duration": 1,
    "ops": {
        "get": {
            "ok": 3,
            "errors": 0,
            "error_rate": 0.0,
            "throughput": 3.0,
            "latency_us": {"count": 3, "p50": 200.0, "p90": 300.0, "p99": 300.0},
            "hist": "",
        }
    },
}
"""A record as the first snapshots wrote it: no lag, inflight or p95, an int time."""


def test_an_old_record_loads_with_the_defaults_of_its_time() -> None:
    recorder = OpRecorder("get")
    recorder.latencies.extend([100_000, 200_000, 300_000])
    old = json.loads(json.dumps(OLD_RECORD))
    old["ops"]["get"]["hist"] = recorder.flush().hist
    (record,) = load_series([old])
    assert (record.lag_ms, record.inflight, record.worker_lag_ms) == (0.0, 0, {})
    assert (record.start, record.elapsed) == (1.0, 2.0)
    op = record.ops["get"]
    assert (op.bytes_in, op.counters, op.last_errors) == (0, {}, None)
    assert latency(op, "p99") == 300.0
    assert latency(op, "p95") == decode(op.hist or "").get_value_at_percentile(95.0)
    snapshot = make_snapshot()
    snapshot["series"] = [old]
    (item,) = intervals(typed(snapshot))
    assert item.ops[TOTAL].ok == 3
    assert (item.start, item.end, item.duration) == (1.0, 2.0, 1.0)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s[1]["ops"]["get"].update(ok="5"), "series.1.ops.get.ok: expected a whole"),
        (lambda s: s[0].pop("phase"), "series.0.phase: missing"),
        (lambda s: s[2].update(worker_lag_ms={"x": 1.0}), "series.2.worker_lag_ms.x"),
    ],
)
def test_a_bad_record_is_one_line_naming_its_field(mutate: Any, message: str) -> None:
    snapshot = make_snapshot()
    mutate(snapshot["series"])
    with pytest.raises(ReportError) as caught:
        typed(snapshot)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_series_that_is_not_a_list_is_named() -> None:
    with pytest.raises(ReportError, match=r"^series: expected a JSON array, found a JSON dict$"):
        load_series({})


def test_a_stats_payload_is_decoded_once_into_typed_fields() -> None:
    wire = payload(1, "sustain", 3)
    frame = StatsFrame.decode(wire)  # type: ignore[arg-type]
    assert (frame.worker, frame.phase, frame.index, frame.t0, frame.t1) == (
        1,
        "sustain",
        3,
        3.0,
        4.0,
    )
    assert (frame.lag_ms, frame.inflight) == (4.5, 2)
    put = frame.ops["put"]
    assert isinstance(put, OpInterval)
    assert (put.ok, put.errors, put.counters) == (8, {"timeout": 1}, {"retries": 3})
    assert put.last_errors == {"timeout": "timeout: slow 3"}
    bare = StatsFrame.decode({k: v for k, v in wire.items() if k not in ("lag_ms", "inflight")})  # type: ignore[arg-type]
    assert (bare.lag_ms, bare.inflight) == (0.0, 0)


def test_phase_histograms_read_back_typed_old_ones_too() -> None:
    snapshot = make_snapshot(open_model=True)
    loaded = typed(snapshot)
    assert set(loaded.histograms["sustain"]["get"]) == {"hist", "hist_uncorrected"}
    assert phase_histogram([loaded], "get", key="hist_uncorrected").get_total_count() > 0
    del snapshot["histograms"]["sustain"]["get"]["hist_uncorrected"]  # before the open model
    loaded = typed(snapshot)
    assert loaded.histograms["sustain"]["get"].keys() == {"hist"}
    assert phase_histogram([loaded], "get", key="hist_uncorrected").get_total_count() == 0
    snapshot["histograms"]["sustain"]["get"]["hist"] = 5
    with pytest.raises(ReportError, match=r"^histograms\.sustain\.get\.hist: expected a valid"):
        typed(snapshot)
