"""A snapshot file of 1.2 MB that inflates to 150 MiB of interval records (a run 400 times
longer than any phase keeps): ``diff``, ``report`` and ``snapshots show`` refuse it with
one line and exit 2 in bounded time and memory (it kept ``diff`` busy past 120 s and took
gigabytes before)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from protobench.snapshots.store import SnapshotStore
from tests.support.processes import MiB, run_watched
from tests.support.snapshots import make_snapshot

pytestmark = pytest.mark.integration

GOOD = "20250101-000000-synthetic-0000"
BOMB = "20250101-000001-synthetic-0001"


def _bomb(path: Path, inflated: int) -> None:
    """A snapshot whose series repeats its last record until the JSON is ``inflated`` bytes,
    gzipped as it is written (the test never holds it whole)."""
    snapshot = make_snapshot(seed=1, intervals=6, run_id=BOMB)
    record = json.dumps(snapshot["series"][-1]).encode()
    snapshot["series"] = ["@"]
    head, tail = json.dumps(snapshot).encode().split(b'"@"')
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [deflate.compress(head + record)]
    written = len(head) + len(record)
    chunk = (b"," + record) * 1000
    while written < inflated:
        parts.append(deflate.compress(chunk))
        written += len(chunk)
    parts += [deflate.compress(tail), deflate.flush()]
    path.write_bytes(b"".join(parts))


@pytest.mark.parametrize(
    "command",
    [["diff", GOOD, BOMB], ["report", BOMB, "-o", "out.html"], ["snapshots", "show", BOMB]],
    ids=["diff", "report", "show"],
)
def test_a_snapshot_inflating_past_the_bound_is_refused_quickly_and_small(
    tmp_path: Path, command: list[str]
) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    store.write(GOOD, make_snapshot(seed=1, intervals=6, run_id=GOOD))
    bomb = store.directory / f"{BOMB}.json.gz"
    _bomb(bomb, 150 * MiB)
    assert bomb.stat().st_size < 2 * MiB
    where = ["--snapshots-dir", str(store.directory)]
    result, peak = run_watched([*command, *where], tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"protobench: error: {bomb}: too large to load: more than 128 MiB of JSON once decompressed"
    ]
    assert peak < 400 * MiB, peak  # the 128 MiB read, never the 150 MiB nor its objects


def test_a_snapshot_of_millions_of_wrong_items_is_refused_quickly_and_small(
    tmp_path: Path,
) -> None:
    """Within every bound but the schema: 2.4 million empty op summaries (took 218 s and
    18 GB of memory to refuse)."""
    snapshot = make_snapshot(seed=1, intervals=6, run_id=BOMB)
    ops = {f"o{i}": {} for i in range(200)}
    record = snapshot["series"][-1]
    snapshot["series"] = [dict(record, index=i, ops=ops) for i in range(12_000)]
    path = tmp_path / f"{BOMB}.json.gz"
    path.write_bytes(zlib.compress(json.dumps(snapshot).encode(), 1, wbits=31))
    result, peak = run_watched(["snapshots", "show", str(path)], tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"protobench: error: {path}: not a valid snapshot: series.0.ops.o0.ok: missing (and 4 more)"
    ]
    assert peak < 1024 * MiB, peak
