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
    removed = prune(store, keep=2)
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
    assert len(prune(store, keep=1, dry_run=True)) == 2
    assert len(store.paths()) == 3
    assert prune(store, keep=10) == []
    assert len(prune(store, keep=0)) == 3
    assert store.paths() == []
    with pytest.raises(ValueError, match=">= 0"):
        prune(store, keep=-1)
