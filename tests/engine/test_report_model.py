"""The typed report: real reports load and serialise back to the same JSON, bad ones name the field.

``reports/*.json`` are ``--json`` outputs of real runs (paths made neutral):
``closed`` and ``open`` (``http-get``, the open one with its uncorrected
latencies and send lateness), ``mqtt`` (``mqtt-qos1``: ops of two latency
kinds, so the total has ``latency_by_kind``) and ``failed`` (a failed threshold).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protobench.engine.report_model import (
    NoticeEntry,
    Report,
    ReportError,
    load_report,
    report_to_json,
    to_plain,
)
from protobench.engine.summaries import LatencySummary, OpSummary
from tests.support.snapshots import make_snapshot

REPORTS = Path(__file__).parent / "reports"
NAMES = ("closed", "open", "mqtt", "failed")


def _real(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPORTS / f"{name}.json").read_text())
    return data


def _drop(data: Any, key: str) -> None:
    if isinstance(data, dict):
        data.pop(key, None)
        for value in data.values():
            _drop(value, key)


def test_a_report_from_before_bytes_out_loads_with_0() -> None:
    data = _real("closed")
    _drop(data, "bytes_out")
    sustain = load_report(data).phases["sustain"]
    assert sustain.total.bytes_out == 0
    assert sustain.total.bytes_in == data["phases"]["sustain"]["total"]["bytes_in"] > 0
    assert all(op.bytes_out == 0 for op in sustain.ops.values())


@pytest.mark.parametrize("name", NAMES)
def test_a_real_report_round_trips_to_the_same_json(name: str) -> None:
    data = _real(name)
    report = load_report(data)
    assert isinstance(report, Report)
    back = json.loads(report_to_json(report))
    assert back == data
    assert list(back) == list(data)  # the keys in the same order too
    sustain = back["phases"]["sustain"]
    assert list(sustain["total"]) == list(data["phases"]["sustain"]["total"])
    assert json.loads(report_to_json(report, indent=True)) == data


def test_the_open_model_keeps_its_uncorrected_latencies_and_the_closed_has_none() -> None:
    open_total = load_report(_real("open")).phases["sustain"].total
    closed_total = load_report(_real("closed")).phases["sustain"].total
    assert isinstance(open_total.latency_uncorrected_us, LatencySummary)
    assert open_total.latency_uncorrected_us.count == open_total.ok
    assert closed_total.latency_uncorrected_us is None
    assert (
        "latency_uncorrected_us"
        not in json.loads(report_to_json(load_report(_real("closed"))))["phases"]["sustain"][
            "total"
        ]
    )


def test_a_total_over_two_latency_kinds_has_no_latency_but_one_per_kind() -> None:
    total = load_report(_real("mqtt")).phases["sustain"].total
    assert total.latency_kind == "mixed"
    assert total.latency_us == LatencySummary()
    assert total.latency_by_kind is not None
    assert len(total.latency_by_kind) == 2
    assert to_plain(total.latency_us) == {}


def test_a_failed_threshold_reads_back_typed() -> None:
    report = load_report(_real("failed"))
    failed = [t for t in report.thresholds if not t.ok]
    assert [t.expr for t in failed] == ["p99 < 1us"]
    assert report.verdicts.thresholds_passed is False


def test_an_old_minimal_snapshot_report_loads_with_defaults() -> None:
    data = json.loads(json.dumps(make_snapshot()["report"]))
    report = load_report(data)
    assert report.verdicts.complete is True
    assert report.verdicts.checks == []
    assert report.workers == []
    assert report.description == ""
    sustain = report.phases["sustain"]
    assert isinstance(sustain.total, OpSummary)
    assert sustain.total.ok > 0
    assert load_report(to_plain(report)) == report


def test_a_notice_keeps_its_details_as_its_own_keys() -> None:
    data = _real("closed")
    notice = {"kind": "worker", "message": "worker 1 failed", "elapsed": 1.5, "worker": 1}
    data["notices"] = [{**notice, "exit_code": None, "log_tail": "boom"}]
    report = load_report(data)
    assert report.notices == [
        NoticeEntry(
            kind="worker",
            message="worker 1 failed",
            elapsed=1.5,
            details={"worker": 1, "exit_code": None, "log_tail": "boom"},
        )
    ]
    assert json.loads(report_to_json(report)) == data


def test_a_snapshot_error_keeps_the_null_snapshot_and_a_saved_report_has_neither() -> None:
    data = _real("closed")
    data["snapshot"] = None
    data["snapshot_error"] = "cannot save the snapshot in /x: denied; nothing could be written"
    assert json.loads(report_to_json(load_report(data))) == data
    del data["snapshot"], data["snapshot_error"]
    assert json.loads(report_to_json(load_report(data))) == data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("phases", "sustain", "total", "ok"),
            "5",
            "phases.sustain.total.ok: expected a whole number",
        ),
        (
            ("phases", "sustain", "total", "ok"),
            1.5,
            "phases.sustain.total.ok: expected a whole number",
        ),
        (
            ("verdicts", "generator_bound"),
            None,
            "verdicts.generator_bound: expected a valid boolean",
        ),
        (("phases", "sustain", "ops"), [], "phases.sustain.ops: expected an object"),
    ],
)
def test_a_bad_field_is_one_line_naming_its_path(
    path: tuple[str, ...], value: object, message: str
) -> None:
    data = _real("closed")
    where = data
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    with pytest.raises(ReportError) as caught:
        load_report(data)
    assert str(caught.value) == message


def test_a_missing_field_and_a_non_object_are_named() -> None:
    data = _real("closed")
    del data["phases"]["sustain"]["total"]["errors"]
    with pytest.raises(ReportError, match=r"^phases\.sustain\.total\.errors: missing$"):
        load_report(data)
    with pytest.raises(ReportError, match=r"^a report: expected a JSON object, found a JSON list$"):
        load_report([])


def test_a_whole_number_beyond_64_bits_is_one_line_not_a_crash() -> None:
    """Python's json reads any integer; no field can hold one past 64 bits."""
    data = _real("closed")
    data["processes"] = -(2**63) - 1
    with pytest.raises(ReportError, match=r"out of range"):
        load_report(data, "run.json.gz")
