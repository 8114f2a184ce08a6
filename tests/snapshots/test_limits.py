"""Tampered snapshot files over the loader's bounds (:mod:`protobench.snapshots.limits`):
each is refused with one line naming the file and the bound, exit 2, before it is held
whole; a snapshot just within the bounds still loads."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram
from typer.testing import CliRunner

from protobench.cli import app
from protobench.snapshots.limits import (
    FREE_FORM_VALUES,
    MAX_HISTOGRAM,
    MAX_ITEMS,
    MAX_JSON_BYTES,
    MAX_NOTICES,
    MAX_STRING,
    MAX_VALUES,
    max_records,
)
from protobench.snapshots.store import SnapshotError, SnapshotStore, read
from tests.support.snapshots import make_snapshot

RUN_ID = "20250101-000000-synthetic-0000"


def _good() -> dict[str, Any]:
    return make_snapshot(seed=1, intervals=6, run_id=RUN_ID)


def _refused(tmp_path: Path, content: bytes, message: str) -> None:
    """``content`` as a snapshot file: ``read`` and ``snapshots show`` refuse it, saying so."""
    path = tmp_path / f"{RUN_ID}.json.gz"
    path.write_bytes(content)
    with pytest.raises(SnapshotError) as caught:
        read(path)
    assert str(caught.value).startswith(f"{path}: "), caught.value
    assert message in str(caught.value), caught.value
    result = CliRunner().invoke(app, ["snapshots", "show", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines == [f"protobench: error: {caught.value}"]
    listed = CliRunner().invoke(app, ["snapshots", "list", "--snapshots-dir", str(tmp_path)])
    assert listed.exit_code == 0
    assert f"skipping {path}: " in listed.stderr


def _gzip(snapshot: dict[str, Any]) -> bytes:
    return gzip.compress(json.dumps(snapshot).encode(), 1)


def test_a_gzip_bomb_is_refused_once_128_mib_are_inflated(tmp_path: Path) -> None:
    snapshot = _good()
    snapshot["labels"] = {"note": "@"}
    head, tail = json.dumps(snapshot).encode().split(b'"@"')
    # one string of 130 MiB, gzipped to about 130 KiB: streamed, never built whole
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [deflate.compress(head + b'"')]
    parts += [deflate.compress(b"A" * (1 << 20)) for _ in range(130)]
    parts += [deflate.compress(b'"' + tail), deflate.flush()]
    _refused(tmp_path, b"".join(parts), "too large to load: more than 128 MiB of JSON")
    assert MAX_JSON_BYTES == 128 << 20


def test_json_of_more_values_than_the_bound_is_refused_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    snapshot = _good()
    rows = MAX_VALUES // MAX_ITEMS + 1
    snapshot["extra"] = [[0] * MAX_ITEMS] * rows  # 32 MB of text, 16 million values
    _refused(tmp_path, _gzip(snapshot), "more than 16,000,000 JSON values")


@pytest.mark.parametrize(("key", "budget"), sorted(FREE_FORM_VALUES.items()))
def test_a_part_kept_as_written_holds_few_values(tmp_path: Path, key: str, budget: int) -> None:
    """Labels, plan and provenance are kept whatever JSON they hold: theirs is bounded apart
    (millions of empty objects in the labels took 2 GB and 23 s to show)."""
    snapshot = _good()
    snapshot[key] = {**snapshot[key], "x": [[{}] * 1000] * (budget // 1000 + 1)}
    _refused(tmp_path, _gzip(snapshot), f"too large to load: {key}: more than {budget:,} values")


def test_more_series_records_than_the_phases_can_hold_are_refused(tmp_path: Path) -> None:
    snapshot = _good()
    record = snapshot["series"][-1]
    snapshot["series"] = [dict(record, index=i) for i in range(max_records() + 1)]
    _refused(tmp_path, _gzip(snapshot), "series: 21,607 items (at most 21,606)")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("report", "notices"),
            [{"kind": "pause", "message": "load paused", "elapsed": 1.0}] * (MAX_NOTICES + 1),
            "report.notices: 10,001 items (at most 10,000)",
        ),
        (
            ("series", 2, "ops"),
            "OPS",
            "series[2].ops: 10,001 keys (at most 10,000)",
        ),
        (
            ("labels",),
            {"note": "x" * (MAX_STRING + 1)},
            "labels.note: 1,048,577 characters (at most 1 MiB)",
        ),
        (
            ("report", "phases", "sustain", "ops", "get", "last_errors"),
            {"protocol": "y" * (MAX_STRING + 1)},
            "report.phases.sustain.ops.get.last_errors.protocol: 1,048,577 characters"
            " (at most 1 MiB)",
        ),
        (
            ("histograms", "sustain", "get", "hist"),
            "A" * (MAX_HISTOGRAM + 4),
            "histograms.sustain.get.hist: 262,148 characters (at most 256 KiB)",
        ),
    ],
    ids=["notices", "ops", "label", "error-text", "histogram-text"],
)
def test_a_part_over_its_bound_is_named(
    tmp_path: Path, path: tuple[Any, ...], value: Any, message: str
) -> None:
    snapshot = _good()
    parent: Any = snapshot
    for part in path[:-1]:
        parent = parent[part]
    if value == "OPS":
        op = parent[path[-1]]["get"]
        value = {f"op{i}": op for i in range(MAX_ITEMS + 1)}
    parent[path[-1]] = value
    _refused(tmp_path, _gzip(snapshot), f"too large to load: {message}")


def _encoded(payload: bytes) -> str:
    compressed = zlib.compress(payload, 9)
    return base64.b64encode(struct.pack(">II", 0x1C849314, len(compressed)) + compressed).decode()


def test_a_histogram_that_inflates_past_the_largest_one_is_refused_unread(tmp_path: Path) -> None:
    header = struct.pack(">IIIIQQd", 0x1C849313, 1 << 27, 0, 3, 1, 60_000_000, 1.0)
    bomb = _encoded(header + bytes(1 << 27))  # 128 MiB of counters in 174 KB of base64
    assert len(bomb) < MAX_HISTOGRAM
    snapshot = _good()
    snapshot["histograms"]["sustain"]["get"]["hist"] = bomb
    _refused(tmp_path, _gzip(snapshot), "inflates past 156,712 bytes")


@pytest.mark.parametrize(
    ("shape", "message"),
    [((1, 60_000_000, 5), "1 .. 60000000 µs, 5 digits"), ((1, 2**62, 3), "1 .. 4611686")],
)
def test_a_histogram_of_another_shape_is_refused(
    tmp_path: Path, shape: tuple[int, int, int], message: str
) -> None:
    hist = HdrHistogram(*shape)
    hist.record_value(5)
    snapshot = _good()
    snapshot["histograms"]["sustain"]["get"]["hist"] = hist.encode().decode()
    _refused(tmp_path, _gzip(snapshot), f"not an encoded HdrHistogram (another shape: {message}")


def test_a_snapshot_within_the_bounds_loads(tmp_path: Path) -> None:
    snapshot = copy.deepcopy(_good())
    snapshot["labels"] = {"note": "x" * MAX_STRING}
    record = snapshot["series"][-1]
    snapshot["series"] = [dict(record, index=i) for i in range(max_records())]
    store = SnapshotStore(tmp_path)
    path = store.write(RUN_ID, snapshot)
    loaded = read(path)
    assert len(loaded.series) == max_records()
    assert loaded.labels["note"] == "x" * MAX_STRING


def test_millions_of_wrong_items_cost_no_more_than_one(tmp_path: Path) -> None:
    """Validation stops at the first wrong item of every list and object: 12 million
    errors took 54 s and 9 GB to collect, then as much to list."""
    snapshot = _good()
    record = snapshot["series"][-1]
    ops = {f"o{i}": {} for i in range(100)}
    snapshot["series"] = [dict(record, index=i, ops=ops) for i in range(500)]
    _refused(
        tmp_path, _gzip(snapshot), "not a valid snapshot: series.0.ops.o0.ok: missing (and 4 more)"
    )
