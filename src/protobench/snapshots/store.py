"""The snapshot store: one gzip JSON file per run, written atomically.

A snapshot (schema ``protobench.snapshot/1``) holds the plan with secrets
redacted, provenance (tool version, profile and its hash, CLI overrides, host,
CPU, Python, git commit of the working directory), the report, the interval
series, the per-phase encoded histograms per operation and the resource
series. The default store is ``./.protobench/snapshots``; worker and target
logs of each run go to ``./.protobench/logs/<id>/``.

References accepted by :meth:`SnapshotStore.resolve`: a path to a file, an id,
a unique id prefix, ``latest`` and ``latest~N``.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import platform
import secrets
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protobench import __version__

if TYPE_CHECKING:
    from protobench.engine.aggregate import Aggregator
    from protobench.engine.plan import RunPlan

SCHEMA = "protobench.snapshot/1"
SUFFIX = ".json.gz"
DEFAULT_DIR = Path(".protobench") / "snapshots"


class SnapshotError(Exception):
    """A snapshot that cannot be found or read."""


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


def provenance(plan: RunPlan) -> dict[str, Any]:
    return {
        "tool_version": __version__,
        "profile": plan.profile,
        "profile_source": plan.source,
        "profile_sha256": plan.profile_sha256,
        "overrides": plan.redacted()["overrides"],
        "host": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": git_commit(Path.cwd()),
    }


class SnapshotStore:
    """A directory of snapshots."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory else DEFAULT_DIR

    def new_id(self, profile: str) -> str:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        return f"{stamp}-{profile}-{secrets.token_hex(2)}"

    def log_dir(self, run_id: str) -> Path:
        path = self.directory.parent / "logs" / run_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def path_of(self, run_id: str) -> Path:
        return self.directory / f"{run_id}{SUFFIX}"

    def save(
        self,
        run_id: str,
        plan: RunPlan,
        report: dict[str, Any],
        aggregator: Aggregator,
        resources: list[dict[str, Any]],
    ) -> Path:
        """Write the snapshot of a run atomically; return its path."""
        snapshot = {
            "schema": SCHEMA,
            "id": run_id,
            "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "partial": report["partial"],
            "labels": report.get("labels", {}),
            "provenance": provenance(plan),
            "plan": plan.redacted(),
            "report": report,
            "series": aggregator.series,
            "histograms": aggregator.phase_histograms(),
            "resources": resources,
        }
        return self.write(run_id, snapshot)

    def write(self, run_id: str, snapshot: dict[str, Any]) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path_of(run_id)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as out:
                out.write(json.dumps(snapshot, separators=(",", ":")).encode())
                out.flush()
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def paths(self) -> list[Path]:
        """Snapshot files, oldest first (ids start with their UTC time)."""
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"*{SUFFIX}"), key=lambda p: p.name)

    def resolve(self, ref: str) -> Path:
        path = Path(ref)
        if path.is_file():
            return path
        paths = self.paths()
        if ref == "latest" or ref.startswith("latest~"):
            back = int(ref.partition("~")[2] or 0) if ref != "latest" else 0
            if back >= len(paths):
                raise SnapshotError(f"{ref}: only {len(paths)} snapshots in {self.directory}")
            return paths[-1 - back]
        matches = [p for p in paths if p.name.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SnapshotError(f"no snapshot {ref!r} in {self.directory}")
        raise SnapshotError(f"{ref!r} is ambiguous: {len(matches)} snapshots match")

    def load(self, ref: str) -> dict[str, Any]:
        path = self.resolve(ref)
        try:
            with gzip.open(path, "rb") as raw:
                data: dict[str, Any] = json.loads(raw.read())
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"{path}: not a readable snapshot ({exc})") from exc
        if data.get("schema") != SCHEMA:
            raise SnapshotError(f"{path}: unknown schema {data.get('schema')!r}")
        return data
