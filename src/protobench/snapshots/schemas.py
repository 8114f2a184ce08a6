"""The published JSON Schemas: the report, the NDJSON events, the snapshot, ``diff --json``,
the profile.

Each is generated from the typed model it describes (pydantic's JSON Schema
of the dataclasses of :mod:`protobench.engine.report_model`,
:mod:`protobench.engine.events` and :class:`protobench.snapshots.diff.Diff`,
of the snapshot's :class:`protobench.snapshots.model.Snapshot`, of the
profile's pydantic model), never
written by hand, and carries an ``$id`` naming its version. The schemas
describe what protobench writes and reads back: a key that a newer release
added is optional, so older files still validate.

The profile's schema is for editors (Taplo, Even Better TOML): draft 7 with
``definitions``, and a duration or a rate may be a string (``"30s"``,
``"5000/s"``) as well as a number of seconds or a rate per second.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from protobench.engine.events import (
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ProfileUpdate,
    ResourceSample,
    RunStarted,
)
from protobench.engine.report_model import FLATTEN, SCHEMA, NoticeEntry, Report

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaMode, JsonSchemaValue

VERSION = 1
"""The version of every published schema (its ``$id`` ends with it)."""
DRAFT = "https://json-schema.org/draft/2020-12/schema"
NAMES = ("report", "event", "snapshot", "diff", "profile")
"""The schemas ``protobench schema`` prints."""
EVENT_TYPES: tuple[tuple[str, type], ...] = (
    ("started", RunStarted),
    ("phase", PhaseChanged),
    ("interval", IntervalUpdate),
    ("resources", ResourceSample),
    ("profile", ProfileUpdate),
    ("notice", Notice),
    ("report", Report),
)
"""Each NDJSON line's ``type`` and the dataclass of the rest of its keys."""
TITLES = {
    "report": f"protobench report ({SCHEMA})",
    "event": "protobench NDJSON event",
    "snapshot": "protobench snapshot (protobench.snapshot/1)",
    "diff": "protobench diff --json (protobench.diff/1)",
    "profile": "protobench profile",
}


def schema_id(name: str) -> str:
    """The ``$id`` of schema ``name``: a URN with its version (protobench has no web home)."""
    return f"urn:protobench:schema:{name}:{VERSION}"


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (one of :data:`NAMES`); ``ValueError`` for another name."""
    builders = {
        "report": report_schema,
        "event": event_schema,
        "snapshot": snapshot_schema,
        "diff": diff_schema,
        "profile": profile_schema,
    }
    if name not in builders:
        raise ValueError(f"unknown schema {name!r} (expected one of {', '.join(NAMES)})")
    return builders[name]()


def _head(name: str, draft: str = DRAFT) -> dict[str, Any]:
    return {"$schema": draft, "$id": schema_id(name), "title": TITLES[name]}


def report_schema() -> dict[str, Any]:
    """The report (``run --json``, the last NDJSON line, a snapshot's ``report``)."""
    body = _dataclasses_schema({"Report": Report})
    defs = body["$defs"]
    return {**_head("report"), **defs.pop("Report"), "title": TITLES["report"], "$defs": defs}


def event_schema() -> dict[str, Any]:
    """One line of ``run --ndjson``: its ``type`` says which event, the other keys are its own."""
    body = _dataclasses_schema({f"{kind}:{cls.__name__}": cls for kind, cls in EVENT_TYPES})
    return {
        **_head("event"),
        "oneOf": [
            {
                "allOf": [
                    {"$ref": f"#/$defs/{cls.__name__}"},
                    {"properties": {"type": {"const": kind}}, "required": ["type"]},
                ]
            }
            for kind, cls in EVENT_TYPES
        ],
        "$defs": body["$defs"],
    }


def snapshot_schema() -> dict[str, Any]:
    """A snapshot file (gzip JSON): its typed :class:`~protobench.snapshots.model.Snapshot`."""
    from protobench.snapshots.model import snapshot_adapter  # noqa: PLC0415 - pydantic, numpy

    body = snapshot_adapter().json_schema()
    defs = body.pop("$defs", {})
    _flatten(defs)
    return {**_head("snapshot"), **body, "title": TITLES["snapshot"], "$defs": defs}


def diff_schema() -> dict[str, Any]:
    """The comparison ``diff --json`` prints (:class:`~protobench.snapshots.diff.Diff`)."""
    from protobench.snapshots.diff import Diff  # noqa: PLC0415 - numpy only for this one

    body = _dataclasses_schema({"Diff": Diff})
    defs = body["$defs"]
    return {**_head("diff"), **defs.pop("Diff"), "title": TITLES["diff"], "$defs": defs}


def profile_schema() -> dict[str, Any]:
    """A profile file (TOML), for editors: draft 7, durations and rates as strings too."""
    from pydantic.json_schema import GenerateJsonSchema  # noqa: PLC0415

    from protobench.profiles.model import Profile  # noqa: PLC0415

    class Toml(GenerateJsonSchema):
        """A value a validator parses first (``"30s"``, ``"5000/s"``) may be written as a string."""

        def function_before_schema(self, schema: Any) -> JsonSchemaValue:
            inner = super().function_before_schema(schema)
            return {"anyOf": [inner, {"type": "string"}]}

    body = Profile.model_json_schema(
        ref_template="#/definitions/{model}", schema_generator=Toml, mode="validation"
    )
    definitions = body.pop("$defs", {})
    return {
        **_head("profile", "http://json-schema.org/draft-07/schema#"),
        **body,
        "title": TITLES["profile"],
        "definitions": definitions,
    }


def _dataclasses_schema(types: dict[str, type]) -> dict[str, Any]:
    """One schema with a ``$defs`` entry per dataclass of ``types`` (and of their parts)."""
    from pydantic import TypeAdapter  # noqa: PLC0415 - pydantic only when a schema is made

    adapters: list[tuple[str, JsonSchemaMode, TypeAdapter[Any]]] = [
        (key, "validation", TypeAdapter(cls)) for key, cls in types.items()
    ]
    _, body = TypeAdapter.json_schemas(adapters)
    defs: dict[str, Any] = body.get("$defs", {})
    _flatten(defs)
    return {"$defs": defs}


def _flatten(defs: dict[str, Any]) -> None:
    """A notice's details are keys of the notice itself in the JSON: say so in its schema."""
    entry = defs.get(NoticeEntry.__name__)
    if entry is None:
        return
    for field in fields(NoticeEntry):
        if field.metadata.get("flatten") == FLATTEN["flatten"]:
            inner = entry["properties"].pop(field.name)
            entry["additionalProperties"] = inner.get("additionalProperties", True)
