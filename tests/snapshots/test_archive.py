"""Where the snapshot archive saves a run when the store cannot be written."""

from __future__ import annotations

import errno
import gzip
from pathlib import Path
from typing import Any

import pytest

from protobench.engine.aggregate import Aggregator
from protobench.engine.archive import RunRecord
from protobench.engine.controller import say_where
from protobench.engine.plan import Overrides, resolve
from protobench.engine.report import exit_code_for
from protobench.engine.report_model import Report
from protobench.profiles import loader
from protobench.snapshots.archive import SnapshotArchive
from protobench.snapshots.store import SnapshotStore, read
from protobench.vocab.exceptions import ExitCode
from tests.support.report_frames import frame, plan_of, report_of


def _refuse(*args: Any, **kwargs: Any) -> Path:
    raise OSError(errno.ENOSPC, "No space left on device", "/full/snaps")


def _archive(tmp_path: Path) -> SnapshotArchive:
    plan = resolve(loader.load("http-get"), Overrides(duration=1.0))
    return SnapshotArchive(SnapshotStore(tmp_path / "snaps"), plan)


def _report() -> Report:
    return report_of(plan_of({"get": 1}), [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 5}})])


def _keep(archive: SnapshotArchive, report: Report) -> Report:
    """What the controller does with a finished run: keep it, and say where in the report."""
    plan = resolve(loader.load("http-get"), Overrides(duration=1.0))
    aggregator = Aggregator(["get"], False, {"warmup": 0.0})
    record = RunRecord(plan, report, aggregator.series, aggregator.phase_histograms(), [])
    return say_where(report, archive.keep(record))


def test_a_store_that_cannot_be_written_falls_back_to_a_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path)
    monkeypatch.setattr(archive.store, "save", _refuse)
    report = _keep(archive, _report())
    assert report.snapshot is not None
    saved = Path(report.snapshot)
    assert saved.is_file()
    assert report.snapshot_error == (
        "cannot save the snapshot in /full/snaps: No space left on device; "
        f"saved in {saved} instead"
    )
    assert exit_code_for(report) == ExitCode.NOT_SAVED
    kept = read(saved).report  # the saved report says it is not in the store
    assert kept.snapshot is None
    assert kept.snapshot_error == "cannot save the snapshot in /full/snaps: No space left on device"
    assert b'"snapshot":null' in gzip.decompress(saved.read_bytes())
    saved.unlink()
    saved.parent.rmdir()


def test_when_nothing_can_be_written_the_report_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path)
    monkeypatch.setattr(SnapshotStore, "save", _refuse)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    report = _keep(archive, _report())
    assert not list(tmp_path.glob("protobench-snapshot-*"))  # no empty directory left behind
    assert report.snapshot is None
    assert str(report.snapshot_error).endswith(
        "; nothing could be written ([Errno 28] No space left on device: '/full/snaps')"
    )
    assert exit_code_for(report) == ExitCode.NOT_SAVED
