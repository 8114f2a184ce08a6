"""Pruning a snapshot store: keep the newest N snapshots, remove the rest and their logs.

Only what reads as a snapshot (:func:`~protobench.snapshots.store.read`, as
``snapshots list`` reads it) is counted and removed; anything else named like
one is left alone and named. A symbolic link is never followed out of the
store: a link named like a snapshot, or a run's logs directory that is a link,
is neither read nor removed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from protobench.snapshots.store import SUFFIX, SnapshotError, SnapshotStore, read


@dataclass
class Pruning:
    """What a prune removed (or would, in a dry run), kept and left alone, oldest first."""

    removed: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Files named like snapshots that are none (or links): each one and why, in a line."""


def prune(store: SnapshotStore, keep: int, dry_run: bool = False) -> Pruning:
    """Remove all but the newest ``keep`` snapshots and their log directories."""
    if keep < 0:
        raise ValueError("keep: expected a number >= 0")
    found = Pruning()
    snapshots = []
    for path in store.paths():
        why = _not_a_snapshot(path)
        if why is None:
            snapshots.append(path)
        else:
            found.skipped.append(why)
    cut = max(0, len(snapshots) - keep)
    found.removed, found.kept = snapshots[:cut], snapshots[cut:]
    if not dry_run:
        for path in found.removed:
            path.unlink(missing_ok=True)
            _remove_logs(store, path.name.removesuffix(SUFFIX))
    return found


def _not_a_snapshot(path: Path) -> str | None:
    """Why ``path`` is not a snapshot this store may remove (naming it), or None."""
    if path.is_symlink():
        return f"{path}: a symbolic link (not followed)"
    if not path.is_file():
        return f"{path}: not a file"
    try:
        read(path)
    except SnapshotError as exc:
        return str(exc)
    return None


def _remove_logs(store: SnapshotStore, run_id: str) -> None:
    try:
        logs = store.logs_of(run_id)
    except ValueError:  # a file not named by a run id has no logs
        return
    if not logs.is_symlink():
        shutil.rmtree(logs, ignore_errors=True)
