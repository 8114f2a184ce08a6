"""The snapshot store: one gzip JSON file per run, written atomically.

A snapshot (schema ``protobench.snapshot/1``) holds the plan with secrets
redacted, provenance (tool version, profile and its hash, CLI overrides, host,
CPU, Python, git commit of the working directory), the report, the interval
series, the per-phase encoded histograms per operation and the resource
series. The default store is ``<home>/snapshots``, and worker and target logs
of each run go to ``<home>/logs/<id>/`` (home: ``$PROTOBENCH_HOME``, else the
user's data directory, :mod:`protobench.home`); a store built on
another directory ``D`` keeps its logs in ``D/logs/<id>/``. Nothing the store
writes leaves its directories: a profile name becomes a run id only through
:func:`safe_name`, and an id is checked before it becomes a path.

Saving is atomic (a temporary file in the store, fsynced, then renamed); a
failure raises :class:`SnapshotWriteError`, an ``OSError`` naming the path.
:meth:`SnapshotStore.temporary` builds a store in a new private temporary
directory, for a caller to fall back to.

Secrets: the stored plan and the provenance's overrides pass through
:func:`protobench.redaction.redact_value`, the report's target through
``redact_url`` (besides the plan's own redaction), and :func:`redacted` does the
same to a snapshot read back, for every export.

References accepted by :meth:`SnapshotStore.resolve`: a path to a file, an id,
a unique id prefix, ``latest`` and ``latest~N``.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import platform
import re
import secrets
import socket
import subprocess
import tempfile
import zlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from protobench import __version__
from protobench.engine.report_model import ReportError, to_plain
from protobench.home import CHECKOUT_HOME, home
from protobench.redaction import redact_url, redact_value
from protobench.snapshots.limits import TooLarge, over_limit, read_bounded
from protobench.snapshots.model import (
    SCHEMA,
    Plan,
    Provenance,
    Snapshot,
    check_run_id,
    load_snapshot,
)
from protobench.vocab.exceptions import BadInput, NotSaved

if TYPE_CHECKING:
    from protobench.engine.archive import RunRecord
    from protobench.engine.plan import RunPlan

SUFFIX = ".json.gz"
DEFAULT_DIR = CHECKOUT_HOME / "snapshots"
DEFAULT_LOGS = CHECKOUT_HOME / "logs"
"""The store and logs of a development install (elsewhere: under :func:`home`)."""
NAME_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_LATEST = re.compile(r"^latest(?:~(?P<back>\d+))?$")


class SnapshotError(BadInput):
    """A snapshot that cannot be found or read, or a reference that is not one."""


class SnapshotWriteError(NotSaved, OSError):
    """A snapshot or log directory that could not be written: the path and the OS error."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path = path

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.strerror}"


def safe_name(name: str) -> str:
    """``name`` as one safe path component: letters, digits, ``_.-`` only, no leading dot.

    ``../../x`` becomes ``x``, ``a b/c`` becomes ``a_b_c``; empty becomes ``run``.
    """
    cleaned = _UNSAFE.sub("_", name).strip("._-")[:NAME_LENGTH].strip("._-")
    return cleaned or "run"


def redacted(snapshot: Snapshot) -> Snapshot:
    """The snapshot with the plan, the provenance's overrides and the target redacted again."""
    provenance = snapshot.provenance.copy()
    if "overrides" in provenance:
        provenance["overrides"] = redact_value(provenance["overrides"])
    report = snapshot.report
    if report.target is not None:
        report = replace(report, target=redact_url(report.target))
    plan = cast("Plan", redact_value(snapshot.plan))
    return replace(snapshot, plan=plan, provenance=provenance, report=report)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(cwd: Path) -> dict[str, Any] | None:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            check=False,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
        )
        if commit.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain"],
            check=False,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def provenance(plan: RunPlan) -> Provenance:
    return {
        "tool_version": __version__,
        "profile": plan.profile,
        "profile_source": plan.source,
        "profile_sha256": plan.profile_sha256,
        "overrides": redact_value(plan.redacted()["overrides"]),
        "host": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": git_commit(Path.cwd()),
    }


class SnapshotStore:
    """A directory of snapshots and one of their runs' logs.

    ``SnapshotStore()`` is ``<home>/snapshots`` with logs in ``<home>/logs``
    (:func:`protobench.home.home`: ``$PROTOBENCH_HOME``, else the user's data
    directory, or ``./.protobench`` for a development install);
    ``SnapshotStore(D)`` keeps its logs in ``D/logs``.
    """

    def __init__(self, directory: Path | None = None, logs: Path | None = None) -> None:
        self.directory = Path(directory) if directory else home() / DEFAULT_DIR.name
        if logs is not None:
            self.logs = Path(logs)
        else:
            self.logs = home() / DEFAULT_LOGS.name if directory is None else self.directory / "logs"

    @classmethod
    def temporary(cls) -> SnapshotStore:
        """A store in a new private (0700) temporary directory: a fallback when saving fails.

        Raises :class:`SnapshotWriteError` when not even that can be created.
        """
        base = Path(tempfile.gettempdir())
        try:
            home = Path(tempfile.mkdtemp(prefix="protobench-"))
        except OSError as exc:
            raise SnapshotWriteError(base, exc) from exc
        return cls(home / "snapshots", home / "logs")

    def new_id(self, profile: str) -> str:
        """A new run id: UTC time, the profile name made safe, 4 random hex digits."""
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        return f"{stamp}-{safe_name(profile)}-{secrets.token_hex(2)}"

    def logs_of(self, run_id: str) -> Path:
        """Where the logs of ``run_id`` are (whether or not they exist)."""
        return self.logs / check_run_id(run_id)

    def log_dir(self, run_id: str) -> Path:
        """The logs directory of ``run_id``, created (:class:`SnapshotWriteError` if it cannot)."""
        path = self.logs_of(run_id)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SnapshotWriteError(path, exc) from exc
        return path

    def path_of(self, run_id: str) -> Path:
        return self.directory / f"{check_run_id(run_id)}{SUFFIX}"

    def save(self, run_id: str, record: RunRecord) -> Path:
        """Write the snapshot of a finished run atomically; return its path."""
        plan, report = record.plan, record.report
        snapshot = Snapshot(
            schema=SCHEMA,
            id=run_id,
            created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            partial=report.partial,
            labels=report.labels or {},
            provenance=provenance(plan),
            plan=cast("Plan", redact_value(plan.redacted())),
            report=replace(report, target=redact_url(report.target)),
            series=record.series,
            histograms=record.histograms,
            resources=record.resources,
            target_profile=record.target_profile,
        )
        return self.write(run_id, to_plain(snapshot))

    def write(self, run_id: str, snapshot: Mapping[str, Any]) -> Path:
        """Write ``snapshot`` (its JSON) atomically as ``run_id``; :class:`SnapshotWriteError`
        on failure."""
        path = self.path_of(run_id)
        data = json.dumps(snapshot, separators=(",", ":")).encode()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=SUFFIX)
        except OSError as exc:
            raise SnapshotWriteError(path, exc) from exc
        try:
            with os.fdopen(fd, "wb") as raw:
                with gzip.GzipFile(fileobj=raw, mode="wb") as out:
                    out.write(data)
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise SnapshotWriteError(path, exc) from exc
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def paths(self) -> list[Path]:
        """Snapshot files, oldest first (ids start with their UTC time); not a snapshot being
        written (its ``.tmp-`` file: a dot-file, which pathlib's ``*`` would match)."""
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"[!.]*{SUFFIX}"), key=lambda p: p.name)

    def resolve(self, ref: str) -> Path:
        """The file of ``ref``; :class:`SnapshotError` (one line) when there is none."""
        if not ref.strip():
            raise SnapshotError("an empty snapshot reference (give an id, a path or latest)")
        try:
            path = Path(ref)
            if path.is_file():
                return path
        except (OSError, ValueError):
            pass  # not a usable path (NUL byte, name too long...): try it as an id
        paths = self.paths()
        latest = _LATEST.match(ref)
        if latest:
            back = int(latest["back"] or 0)
            if back >= len(paths):
                raise SnapshotError(f"{ref}: only {len(paths)} snapshots in {self.directory}")
            return paths[-1 - back]
        if ref.startswith("latest"):
            raise SnapshotError(f"{ref!r}: expected latest or latest~N with N a whole number")
        matches = [p for p in paths if p.name.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SnapshotError(f"no snapshot {ref!r} in {self.directory}")
        raise SnapshotError(f"{ref!r} is ambiguous: {len(matches)} snapshots match")

    def load(self, ref: str) -> Snapshot:
        """The snapshot ``ref`` names, validated (:func:`read`)."""
        return read(self.resolve(ref))


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, a snapshot of this schema, not yet checked further.

    A replay shows the run's start from it while :func:`read` checks the rest.
    Unreadable, truncated or corrupt gzip, not JSON, over one of the loader's
    bounds (:mod:`~protobench.snapshots.limits`), not an object, another schema: a
    :class:`SnapshotError` of one line naming the file and what is wrong.
    """
    try:
        with gzip.open(path, "rb") as raw:
            text = read_bounded(raw.read)
    except EOFError:
        raise SnapshotError(f"{path}: truncated (the gzip stream ends early)") from None
    except (OSError, zlib.error) as exc:
        raise SnapshotError(f"{path}: not a readable gzip file ({_one_line(exc)})") from None
    except TooLarge as exc:
        raise SnapshotError(f"{path}: too large to load: {exc}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SnapshotError(f"{path}: not JSON ({_one_line(exc)})") from None
    del text
    why = over_limit(data)
    if why is not None:
        raise SnapshotError(f"{path}: too large to load: {_one_line(why)[:200]}")
    if isinstance(data, dict) and data.get("schema") != SCHEMA:
        raise SnapshotError(
            f"{path}: unknown schema {_one_line(repr(data.get('schema')))[:80]} "
            f"(expected {SCHEMA!r})"
        )
    if not isinstance(data, dict):
        kind = "null" if data is None else f"a JSON {type(data).__name__}"
        raise SnapshotError(f"{path}: not a valid snapshot: expected a JSON object, found {kind}")
    return data


def read(path: Path, data: dict[str, Any] | None = None) -> Snapshot:
    """The typed snapshot in ``path`` (:func:`~protobench.snapshots.model.load_snapshot`);
    ``data``: its JSON, when :func:`read_json` read it already.

    Every failure (those of :func:`read_json`, a missing key or a wrong type)
    is a :class:`SnapshotError` of one line naming the file and what is wrong.
    """
    if data is None:
        data = read_json(path)
    from protobench.snapshots.schema import histograms_problem  # noqa: PLC0415 - numpy

    try:
        snapshot = load_snapshot(data)
    except ReportError as exc:
        raise SnapshotError(f"{path}: not a valid snapshot: {_one_line(exc)}") from None
    why = histograms_problem(snapshot.histograms)
    if why is not None:
        raise SnapshotError(f"{path}: not a valid snapshot: {_one_line(why)}")
    return snapshot


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
