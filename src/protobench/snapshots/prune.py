"""Pruning a snapshot store: keep the newest N snapshots, remove the rest and their logs."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from protobench.snapshots.store import SUFFIX, SnapshotStore


def prune(store: SnapshotStore, keep: int, dry_run: bool = False) -> list[Path]:
    """Remove all but the newest ``keep`` snapshots and their log directories.

    Returns the snapshot files removed (or that would be, with ``dry_run``),
    oldest first.
    """
    if keep < 0:
        raise ValueError("keep: expected a number >= 0")
    paths = store.paths()
    doomed = paths[: max(0, len(paths) - keep)]
    if not dry_run:
        for path in doomed:
            path.unlink(missing_ok=True)
            with contextlib.suppress(ValueError):  # a file not named by a run id has no logs
                shutil.rmtree(store.logs_of(path.name.removesuffix(SUFFIX)), ignore_errors=True)
    return doomed
