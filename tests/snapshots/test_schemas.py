"""The published JSON Schemas: real reports, events, snapshots and every built-in profile
validate; a wrong type does not; each schema has its versioned ``$id``."""

from __future__ import annotations

import json
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from protobench.cli import app
from protobench.engine.events import IntervalUpdate
from protobench.engine.report_model import to_plain
from protobench.profiles import loader
from protobench.snapshots.diff import compare, parse_gate
from protobench.snapshots.model import Snapshot
from protobench.snapshots.schemas import NAMES, json_schema, schema_id
from tests.support.report_frames import frame, plan_of, report_of
from tests.support.snapshots import OpSpec, make_snapshot, typed_snapshot

REPORTS = Path(__file__).parents[1] / "engine" / "reports"


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_a_valid_schema_with_a_versioned_id(name: str) -> None:
    schema = json_schema(name)
    assert schema["$id"] == schema_id(name)
    assert schema["$id"].endswith(":1")
    jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.parametrize("report", sorted(REPORTS.glob("*.json")), ids=lambda p: p.stem)
def test_real_reports_validate_and_a_wrong_type_does_not(report: Path) -> None:
    validator = _validator("report")
    data = json.loads(report.read_text())
    validator.validate(data)
    data["phases"]["sustain"]["total"]["ok"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_a_notice_with_details_validates_as_the_json_has_it() -> None:
    data = json.loads((REPORTS / "closed.json").read_text())
    data["notices"] = [{"kind": "worker", "message": "failed", "elapsed": 1.0, "worker": 1}]
    _validator("report").validate(data)
    data["notices"][0]["worker"] = {"nested": "no"}
    with pytest.raises(jsonschema.ValidationError):
        _validator("report").validate(data)


def test_an_interval_event_with_its_phase_so_far_and_verdicts_validates() -> None:
    plan = plan_of({"get": 2}, ("p99 < 5ms",))
    report = report_of(plan, [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 5}})])
    assert report.sustain is not None
    event = IntervalUpdate(
        phase="sustain",
        index=0,
        elapsed=1.0,
        duration=1.0,
        ops=dict(report.sustain.ops),
        total=report.sustain.total,
        lag_ms=0.5,
        inflight=0,
        worker_lag_ms={0: 0.5},
        phase_summary=report.sustain,
    )
    line: dict[str, Any] = {"type": "interval", **json.loads(json.dumps(to_plain(event)))}
    validator = _validator("event")
    validator.validate(line)
    validator.validate({"type": "report", **json.loads(json.dumps(to_plain(report)))})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**line, "type": "started"})


def test_a_snapshot_validates_with_its_report() -> None:
    _validator("snapshot").validate(json.loads(json.dumps(make_snapshot())))


def test_the_snapshot_schema_is_the_typed_snapshot_s() -> None:
    schema = json_schema("snapshot")
    assert list(schema["properties"]) == [f.name for f in fields(Snapshot)]
    assert set(schema["required"]) == {"schema", "id", "created_at", "partial"} | {
        "provenance",
        "plan",
        "report",
        "series",
        "histograms",
    }
    old = make_snapshot()
    del old["labels"], old["resources"]  # the first snapshots had neither
    _validator("snapshot").validate(json.loads(json.dumps(old)))
    bad = make_snapshot()
    bad["resources"][0]["workers"][0]["cpu"] = "busy"
    with pytest.raises(jsonschema.ValidationError):
        _validator("snapshot").validate(json.loads(json.dumps(bad)))


def test_a_comparison_with_gates_validates_and_a_wrong_type_does_not() -> None:
    slower = {"get": OpSpec(median_us=1500.0), "put": OpSpec()}  # TOTAL rows cannot decide
    gates = [parse_gate(g) for g in ("get:p50:+10%", "get:throughput:-50%", "p50:+10%")]
    diff = compare([typed_snapshot(seed=1)], [typed_snapshot(slower, seed=3)], gates=gates)
    data = json.loads(json.dumps(diff.to_dict()))
    assert {g["status"] for g in data["gates"]} == {"failed", "passed", "inconclusive"}
    validator = _validator("diff")
    validator.validate(data)
    data["rows"][0]["base"]["n"] = "twelve"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


@pytest.mark.parametrize("name", loader.builtin_names())
def test_every_built_in_profile_validates_against_the_profile_schema(name: str) -> None:
    _validator("profile").validate(tomllib.loads(loader.builtin_text(name)))


def test_the_profile_schema_catches_an_unknown_key_and_a_bad_count() -> None:
    profile = tomllib.loads(loader.builtin_text("http-get"))
    validator = _validator("profile")
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**profile, "duratoin": "10s"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**profile, "connections": 0})


def test_the_command_prints_a_schema_and_rejects_an_unknown_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        app(["schema", "report"], standalone_mode=True)
    assert done.value.code == 0
    assert json.loads(capsys.readouterr().out)["$id"] == schema_id("report")
    with pytest.raises(SystemExit) as done:
        app(["schema", "diffs"], standalone_mode=True)
    assert done.value.code == 2
    assert "unknown schema 'diffs'" in capsys.readouterr().err
