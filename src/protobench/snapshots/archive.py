"""The snapshot store as the run's archive: its id, its log directory, then the saved snapshot.

The caller (the CLI, the monitor's live source) makes a :class:`SnapshotArchive`
for a plan and a store, and hands it to the controller with the log
directory it chose (:func:`stored_controller` does both). Nothing is lost
to a store that cannot be written:

- the log directory falls back to a new temporary directory, and
  :attr:`SnapshotArchive.warning` says so (the controller records it as a
  ``logs`` notice);
- the snapshot falls back to a new temporary directory, and the report's
  ``snapshot_error`` names the store's path, the error and where the snapshot
  went instead (or that nothing could be written): exit code 5. The snapshot
  saved there carries the store's error in its report (and ``snapshot``: null).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from protobench.engine.archive import Kept, RunRecord
from protobench.engine.controller import Controller, say_where
from protobench.engine.plan import RunPlan
from protobench.engine.pool_contract import PoolFactory
from protobench.engine.sinks import Sink
from protobench.snapshots.store import SnapshotStore


class SnapshotArchive:
    """Keeps a run of ``plan`` in ``store`` under a new id."""

    def __init__(self, store: SnapshotStore, plan: RunPlan) -> None:
        self.store = store
        self.run_id = store.new_id(plan.profile)
        self.warning: str | None = None
        """Why the logs are not in the store's log directory, when they are not."""
        self.log_dir = self._make_log_dir()

    def _make_log_dir(self) -> Path:
        """The store's log directory of this run, or a temporary one when it cannot be made."""
        try:
            return self.store.log_dir(self.run_id)
        except OSError as exc:
            fallback = Path(tempfile.mkdtemp(prefix=f"protobench-logs-{self.run_id}-"))
            self.warning = (
                f"cannot create the log directory in {self.store.directory.parent}: "
                f"{exc.strerror or exc}; logs go to {fallback}"
            )
            return fallback

    def keep(self, record: RunRecord) -> Kept:
        """Save the snapshot in the store, else in a temporary directory; say which."""
        try:
            return Kept(self.store.save(self.run_id, record).resolve())
        except (OSError, TypeError, ValueError) as exc:
            where = getattr(exc, "filename", None) or self.store.directory
            error = f"cannot save the snapshot in {where}: {getattr(exc, 'strerror', None) or exc}"
        fallback: Path | None = None
        elsewhere = replace(record, report=say_where(record.report, Kept(None, error)))
        try:
            fallback = Path(tempfile.mkdtemp(prefix="protobench-snapshot-"))
            path = SnapshotStore(fallback).save(self.run_id, elsewhere).resolve()
        except (OSError, TypeError, ValueError) as again:
            if fallback is not None:
                shutil.rmtree(fallback, ignore_errors=True)
            return Kept(None, f"{error}; nothing could be written ({again})")
        return Kept(path, f"{error}; saved in {path} instead")


def stored_controller(
    plan: RunPlan,
    store: SnapshotStore,
    *,
    sinks: list[Sink] | None = None,
    target_pid: int | None = None,
    labels: dict[str, Any] | None = None,
    pool_factory: PoolFactory | None = None,
) -> Controller:
    """A controller of ``plan`` whose logs and snapshot go to ``store``."""
    snapshot = SnapshotArchive(store, plan)
    controller = Controller(
        plan,
        snapshot.log_dir,
        sinks=sinks,
        archive=snapshot,
        target_pid=target_pid,
        labels=labels,
        pool_factory=pool_factory,
    )
    if snapshot.warning is not None:
        controller.notice("logs", snapshot.warning)
    return controller
