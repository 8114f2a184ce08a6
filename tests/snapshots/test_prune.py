"""Pruning a snapshot store keeps the newest snapshots and removes the others' logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from protobench.snapshots.prune import prune
from protobench.snapshots.store import SnapshotStore
from tests.support.snapshots import make_snapshot


def _store(tmp_path: Path, count: int) -> SnapshotStore:
    store = SnapshotStore(tmp_path / "snapshots")
    for index in range(count):
        run_id = f"20250101-00000{index}-synthetic-000{index}"
        store.write(run_id, {**make_snapshot(seed=1), "id": run_id})
        (store.log_dir(run_id) / "worker-0.log").write_text("log")
    return store


def test_prune_keeps_the_newest_and_removes_the_rest_with_their_logs(tmp_path: Path) -> None:
    store = _store(tmp_path, 5)
    removed = prune(store, keep=2).removed
    assert [p.name for p in removed] == [
        f"20250101-00000{i}-synthetic-000{i}.json.gz" for i in range(3)
    ]
    assert [p.name for p in store.paths()] == [
        f"20250101-00000{i}-synthetic-000{i}.json.gz" for i in (3, 4)
    ]
    logs = sorted(p.name for p in (tmp_path / "snapshots" / "logs").iterdir())
    assert logs == ["20250101-000003-synthetic-0003", "20250101-000004-synthetic-0004"]
    assert store.load("latest").id == "20250101-000004-synthetic-0004"


def test_dry_run_removes_nothing_and_keep_beyond_the_count_is_a_no_op(tmp_path: Path) -> None:
    store = _store(tmp_path, 3)
    assert len(prune(store, keep=1, dry_run=True).removed) == 2
    assert len(store.paths()) == 3
    assert prune(store, keep=10).removed == []
    assert len(prune(store, keep=0).removed) == 3
    assert store.paths() == []
    with pytest.raises(ValueError, match=">= 0"):
        prune(store, keep=-1)


def test_prune_removes_only_what_reads_as_a_snapshot_and_follows_no_link(tmp_path: Path) -> None:
    store = _store(tmp_path, 3)
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / "precious.txt"
    precious.write_text("not a snapshot")
    logs = outside / "logs"
    logs.mkdir()
    (logs / "keep.log").write_text("log")
    directory = tmp_path / "snapshots"
    linked = directory / "20240101-000000-linked-0000.json.gz"
    linked.symlink_to(precious)  # older than every snapshot: first in line
    also = directory / "20240101-000001-snapshot-0001.json.gz"
    also.symlink_to(store.paths()[-1])  # a link to a real snapshot, still a link
    broken = directory / "20240101-000002-broken-0002.json.gz"
    broken.write_bytes(b"not gzip")
    (directory / "logs" / "20250101-000000-synthetic-0000").rename(tmp_path / "gone")
    (directory / "logs" / "20250101-000000-synthetic-0000").symlink_to(logs)

    pruning = prune(store, keep=1)
    assert [p.name for p in pruning.removed] == [
        "20250101-000000-synthetic-0000.json.gz",
        "20250101-000001-synthetic-0001.json.gz",
    ]
    assert [p.name for p in pruning.kept] == ["20250101-000002-synthetic-0002.json.gz"]
    assert [why.split(":")[0] for why in pruning.skipped] == [str(linked), str(also), str(broken)]
    assert "symbolic link" in pruning.skipped[0]
    assert "not a readable gzip file" in pruning.skipped[2]
    assert linked.is_symlink()
    assert precious.read_text() == "not a snapshot"
    assert also.is_symlink()
    assert broken.exists()
    assert (logs / "keep.log").exists()  # a run's logs that are a link elsewhere: left alone
