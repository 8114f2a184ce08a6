"""Real outputs of a run of every protocol validate against the published schemas.

Each run is an embedded target for 1 s of warmup and 2 s of sustain: every
``--ndjson`` line against the event schema, the last line (the report)
against the report schema, an open-model ``--json`` report too, and the
snapshot each run saved against the snapshot schema.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from protobench.snapshots.schemas import json_schema
from tests.support.cli import CliResult

pytestmark = pytest.mark.integration

SHORT = ("--warmup", "1s", "--duration", "2s", "--quiet")


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json_schema(name)
    return jsonschema.validators.validator_for(schema)(schema)


def _check_snapshot(report: dict[str, Any]) -> None:
    with gzip.open(Path(report["snapshot"]), "rt") as raw:
        _validator("snapshot").validate(json.load(raw))


@pytest.mark.parametrize(
    ("profile", "extra"),
    [
        ("http-get", ("-c", "4")),
        ("ws-echo", ("-c", "4")),
        ("mqtt-qos1", ()),
        ("bacnet-ip", ()),
        ("bacnet-sc", ()),
        ("haystack-http", ("-c", "4")),
        ("beckn-bap", ("-c", "4")),
    ],
)
def test_every_ndjson_line_of_a_run_validates(
    cli: Callable[..., CliResult], profile: str, extra: tuple[str, ...]
) -> None:
    result = cli("run", profile, "-p", "1", *extra, *SHORT, "--ndjson")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    events = _validator("event")
    for line in lines:
        events.validate(line)
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "started"
    assert "interval" in kinds
    assert kinds[-1] == "report"
    report = {k: v for k, v in lines[-1].items() if k != "type"}
    _validator("report").validate(report)
    _check_snapshot(report)


def test_an_open_model_json_report_validates(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "http-get", "-p", "1", "-c", "4", "-r", "200/s", *SHORT, "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert "latency_uncorrected_us" in report["phases"]["sustain"]["total"]
    _validator("report").validate(report)
    _check_snapshot(report)
