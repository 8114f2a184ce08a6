"""The snapshot (``protobench.snapshot/1``), typed, and its one loader.

A :class:`Snapshot` is what :meth:`~protobench.snapshots.store.SnapshotStore.save`
writes and :func:`~protobench.snapshots.store.read` gives back: identity, the
plan (its JSON, secrets redacted: only ``groups`` and ``interval`` are read
back), provenance, the typed :class:`~protobench.engine.report_model.Report`,
the interval series (:class:`~protobench.engine.series_model.SeriesRecord`),
the phase histograms, the resource samples
(:class:`~protobench.engine.resource_log.ResourceRecord`) and, for a run that
sampled its target, the target's profile
(:class:`~protobench.engine.stacks.model.TargetProfile`). Its JSON
(:func:`~protobench.engine.report_model.to_plain`) is the file's, keys in field
order; the published JSON Schema (``protobench schema snapshot``) is generated
from it. :func:`load_snapshot` reads parsed JSON back with pydantic, imported
only then; a key that a newer release added has the default of the files
written before it.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from protobench.engine.report_model import (
    JsonValue,
    Report,
    ReportError,
    nested_notices,
    validated,
)
from protobench.engine.stacks.model import TargetProfile
from protobench.engine.summaries import OMIT_NONE

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from protobench.engine.resource_log import ResourceRecord
    from protobench.engine.series_model import PhaseHistograms, SeriesRecord

SCHEMA = "protobench.snapshot/1"
ID_LENGTH = 200
"""The longest run id a snapshot may have."""
_OPEN = {"extra": "allow"}
"""Pydantic's config of a typed dict whose other keys are kept (the plan, provenance)."""


class Group(TypedDict):
    """A group (operation) of the plan: its name is what a snapshot's reader needs."""

    name: str


class Plan(TypedDict):
    """The plan's JSON; a reader uses its groups and interval, the other keys are kept."""

    groups: list[Group]
    interval: NotRequired[float]


class Provenance(TypedDict):
    """Where a run came from; only the version is required (a scripted run has no host)."""

    tool_version: str
    profile: NotRequired[str]
    profile_source: NotRequired[str | None]
    profile_sha256: NotRequired[str | None]
    overrides: NotRequired[dict[str, JsonValue]]
    host: NotRequired[str]
    cpu_model: NotRequired[str]
    cpu_count: NotRequired[int | None]
    python: NotRequired[str]
    platform: NotRequired[str]
    git: NotRequired[dict[str, JsonValue] | None]


for _open in (Group, Plan, Provenance):
    setattr(_open, "__pydantic_config__", _OPEN)  # noqa: B010 - no pydantic import here


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """One run as kept: what protobench reads back for ``snapshots``, ``diff``, ``replay``."""

    schema: str
    id: str
    created_at: str
    partial: bool
    labels: dict[str, JsonValue] = field(default_factory=dict)
    provenance: Provenance
    plan: Plan
    report: Report
    series: list[SeriesRecord]
    histograms: PhaseHistograms
    resources: list[ResourceRecord] = field(default_factory=list)
    target_profile: TargetProfile | None = field(default=None, metadata=OMIT_NONE)
    """The target's sampled stacks over sustain (``run --profile-target``)."""

    @property
    def operations(self) -> list[str]:
        """The operation (group) names, in plan order."""
        return [group["name"] for group in self.plan["groups"]]

    @property
    def interval(self) -> float:
        """The plan's interval in seconds (0 when the plan does not say)."""
        return float(self.plan.get("interval", 0.0))


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is one path component (no separator, not hidden); ``ValueError`` if not.

    New ids are made of safe characters only
    (:meth:`~protobench.snapshots.store.SnapshotStore.new_id`); this accepts the ids of
    older snapshots too, as long as they stay one component.
    """
    if (
        not run_id
        or run_id.startswith(".")
        or len(run_id) > ID_LENGTH
        or any(c in run_id for c in "/\\\x00")
    ):
        raise ValueError(f"not a valid run id: {run_id!r}")
    return run_id


@functools.cache
def snapshot_adapter() -> TypeAdapter[Snapshot]:
    """Pydantic's adapter of :class:`Snapshot` (its loader, and its published JSON Schema)."""
    # pydantic, the series (numpy, hdrh) and the resource records only when a snapshot is
    # read: the adapter resolves the field types from this frame's names
    from pydantic import TypeAdapter  # noqa: PLC0415

    from protobench.engine.resource_log import ResourceRecord  # noqa: PLC0415, F401
    from protobench.engine.series_model import PhaseHistograms, SeriesRecord  # noqa: PLC0415, F401

    return TypeAdapter(Snapshot)


def load_snapshot(data: object) -> Snapshot:
    """The typed snapshot of parsed JSON ``data``; :class:`ReportError` naming a bad field.

    The plan and provenance keep their JSON as it is (every key, every value).
    """
    if not isinstance(data, dict):
        kind = "null" if data is None else f"a JSON {type(data).__name__}"
        raise ReportError(f"expected a JSON object, found {kind}")
    if isinstance(data.get("report"), dict):
        data = {**data, "report": nested_notices(data["report"])}
    snapshot = validated(snapshot_adapter(), data, "")
    try:
        check_run_id(snapshot.id)
    except ValueError as exc:
        raise ReportError(f"id: {exc}") from None
    try:
        dt.datetime.fromisoformat(snapshot.created_at)
    except ValueError:
        raise ReportError(f"created_at: not an ISO 8601 time: {snapshot.created_at!r}") from None
    plan: Any = data["plan"]
    provenance: Any = data["provenance"]
    return replace(snapshot, plan=plan, provenance=provenance)
