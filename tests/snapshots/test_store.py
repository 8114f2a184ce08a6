"""The snapshot store on its own: safe paths, atomic writes that fail clearly, references."""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from protobench.engine.aggregate import Aggregator
from protobench.engine.archive import RunRecord
from protobench.engine.plan import Overrides, resolve
from protobench.engine.report_model import load_report, to_plain
from protobench.profiles import loader
from protobench.snapshots.model import check_run_id
from protobench.snapshots.store import (
    DEFAULT_LOGS,
    SnapshotError,
    SnapshotStore,
    SnapshotWriteError,
    read,
    redacted,
    safe_name,
)
from tests.support.snapshots import make_snapshot, typed


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("http-get", "http-get"),
        ("../../../escaped", "escaped"),
        ("/etc/passwd", "etc_passwd"),
        ("a b/c\\d", "a_b_c_d"),
        ("..", "run"),
        ("", "run"),
        (".hidden", "hidden"),
        ("x" * 300, "x" * 64),
        ("naïve name", "na_ve_name"),
    ],
)
def test_a_profile_name_becomes_one_safe_path_component(name: str, safe: str) -> None:
    assert safe_name(name) == safe


def test_a_hostile_profile_name_cannot_put_logs_or_snapshots_outside_the_store(
    tmp_path: Path,
) -> None:
    store = SnapshotStore(tmp_path / "store" / "snapshots")
    run_id = store.new_id("../../../escaped")
    logs = store.log_dir(run_id)
    assert logs.resolve().is_relative_to((tmp_path / "store").resolve())
    path = store.write(run_id, {**make_snapshot(seed=1), "id": run_id})
    assert path.parent == store.directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    for bad in ("../x", "a/b", "..", "", ".hidden", "x/../../y", "a\\b", "a\x00b"):
        with pytest.raises(ValueError, match="not a valid run id"):
            store.log_dir(bad)
        with pytest.raises(ValueError, match="not a valid run id"):
            store.path_of(bad)
    assert check_run_id("20250101-000000-http-get-ab12") == "20250101-000000-http-get-ab12"


def test_logs_live_in_the_store_given_or_beside_the_default_store(tmp_path: Path) -> None:
    assert SnapshotStore().logs == DEFAULT_LOGS
    store = SnapshotStore(tmp_path / "d")
    assert store.log_dir("run-1") == tmp_path / "d" / "logs" / "run-1"
    assert (
        SnapshotStore(tmp_path / "d", tmp_path / "l").logs_of("run-1") == tmp_path / "l" / "run-1"
    )


def test_a_failed_write_names_the_path_and_leaves_nothing_behind(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = SnapshotStore(blocker / "snapshots")
    with pytest.raises(SnapshotWriteError) as caught:
        store.write("run-1", make_snapshot(seed=1))
    assert isinstance(caught.value, OSError)
    assert str(caught.value).startswith(f"cannot write {blocker / 'snapshots' / 'run-1.json.gz'}: ")
    assert "\n" not in str(caught.value)
    with pytest.raises(SnapshotWriteError, match=f"cannot write {blocker}/snapshots/logs/run-1"):
        store.log_dir("run-1")


def test_a_full_disk_fails_clearly_and_a_temporary_store_takes_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SnapshotStore(tmp_path / "full")

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(SnapshotWriteError, match=r"full/run-1\.json\.gz: No space left on device"):
        store.write("run-1", make_snapshot(seed=1))
    assert list(store.directory.iterdir()) == []  # the temporary file is gone
    monkeypatch.undo()
    fallback = SnapshotStore.temporary()
    home = fallback.directory.parent
    try:
        assert home.stat().st_mode & 0o777 == 0o700
        path = fallback.write("run-1", make_snapshot(seed=1))
        assert fallback.load(str(path)).schema == "protobench.snapshot/1"
        assert fallback.log_dir("run-1") == home / "logs" / "run-1"
    finally:
        shutil.rmtree(home)


def test_writes_are_atomic_gzip_json(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    path = store.write("run-1", make_snapshot(seed=1))
    assert [p.name for p in tmp_path.iterdir()] == ["run-1.json.gz"]
    with gzip.open(path, "rt") as raw:
        assert json.load(raw)["id"] == make_snapshot(seed=1)["id"]


def test_a_snapshot_being_written_is_not_listed(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    store.write("run-1", make_snapshot(seed=1))
    (tmp_path / ".tmp-k2x9run-2.json.gz").write_bytes(b"\x1f\x8b")  # a write in progress
    assert [p.name for p in store.paths()] == ["run-1.json.gz"]
    assert store.resolve("latest").name == "run-1.json.gz"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("latest~abc", "'latest~abc': expected latest or latest~N with N a whole number"),
        ("latest~-1", "expected latest or latest~N"),
        ("latest~", "expected latest or latest~N"),
        ("latest~5", "latest~5: only 2 snapshots in"),
        ("", "an empty snapshot reference"),
        ("nope", "no snapshot 'nope' in"),
        ("2025", "'2025' is ambiguous: 2 snapshots match"),
        ("a\x00b", "no snapshot 'a\\x00b'"),
        ("x" * 5000, "no snapshot"),
    ],
)
def test_bad_references_are_one_line_errors(tmp_path: Path, ref: str, message: str) -> None:
    store = SnapshotStore(tmp_path)
    for index in range(2):
        store.write(f"2025010{index}-run", make_snapshot(seed=1))
    with pytest.raises(SnapshotError) as caught:
        store.resolve(ref)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_saved_snapshot_and_its_exports_hold_no_url_password(tmp_path: Path) -> None:
    url = "ws://alice:hunter2@127.0.0.1:9/echo?token=tok3n&room=1"
    plan = resolve(loader.load("ws-echo"), Overrides(target=url))
    aggregator = Aggregator([g.name for g in plan.groups], False, {"warmup": 0.0})
    report = load_report({**make_snapshot(seed=1)["report"], "target": url})
    store = SnapshotStore(tmp_path)
    record = RunRecord(plan, report, aggregator.series, aggregator.phase_histograms(), [])
    path = store.save("run-1", record)
    with gzip.open(path, "rt") as raw:
        text = raw.read()
    assert "hunter2" not in text
    assert "tok3n" not in text
    assert "alice" in text
    # snapshots written before this release are redacted again when shown or exported
    old = {**make_snapshot(seed=1), "plan": {"target": url, "groups": [{"name": "get"}]}}
    old["provenance"]["overrides"] = {"target": url, "options": {"password": "pw-9"}}
    old["report"]["target"] = url
    shown = json.dumps(to_plain(redacted(typed(old))))
    assert "hunter2" not in shown
    assert "tok3n" not in shown
    assert "pw-9" not in shown


def test_a_saved_snapshot_reads_back_typed_to_the_same_bytes(tmp_path: Path) -> None:
    source = typed(make_snapshot(seed=1, open_model=True))
    plan = resolve(loader.load("ws-echo"), Overrides(target="ws://127.0.0.1:9/echo"))
    record = RunRecord(plan, source.report, source.series, source.histograms, source.resources)
    path = SnapshotStore(tmp_path).save("run-1", record)
    with gzip.open(path, "rt") as raw:
        text = raw.read()
    snapshot = read(path)
    assert (snapshot.id, snapshot.report, snapshot.series) == (
        "run-1",
        source.report,
        source.series,
    )
    assert (snapshot.histograms, snapshot.resources) == (source.histograms, source.resources)
    assert snapshot.operations == [g.name for g in plan.groups]
    assert json.dumps(to_plain(snapshot), separators=(",", ":")) == text
    assert list(json.loads(text)) == [
        "schema",
        "id",
        "created_at",
        "partial",
        "labels",
        "provenance",
        "plan",
        "report",
        "series",
        "histograms",
        "resources",
    ]


def test_an_old_snapshot_loads_with_the_defaults_of_its_time() -> None:
    old = make_snapshot(seed=1)
    del old["labels"], old["resources"]  # the first snapshots had neither
    snapshot = typed(old)
    assert (snapshot.labels, snapshot.resources) == ({}, [])
    assert snapshot.plan == old["plan"]  # the plan and provenance as written, every key
    assert snapshot.provenance == old["provenance"]
    sample = typed(make_snapshot(seed=1)).resources[0]
    assert "fds" not in sample["workers"][0]  # before fds, node and off_host were sampled
    assert "span" not in sample
