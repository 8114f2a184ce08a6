"""The snapshot's schema (``protobench.snapshot/1``) as typed dicts, checked on every read.

It describes what protobench reads back (``snapshots list/show/export``,
``diff``, ``replay``): identity, provenance, the plan's operations and interval,
the report's phases and verdicts, the interval series, the phase histograms
and the resource samples, each key with its type (counts are whole numbers
>= 0, durations finite and >= 0, times ISO 8601). Other keys may be present.
:func:`problem` gives the first mismatch as one line naming the key
(``report.phases.sustain.total.ok: expected a whole number``), or ``None``.
The encoded histograms of the phases are decoded here too; those of the
interval series (thousands) are checked where they are read, by :func:`decoded`.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict

from pydantic import AfterValidator, Field, TypeAdapter, ValidationError

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

Count = Annotated[int, Field(ge=0)]
Number = Annotated[float, Field(allow_inf_nan=False)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


def _iso_time(value: str) -> str:
    dt.datetime.fromisoformat(value)
    return value


def _run_id(value: str) -> str:
    from protobench.snapshots.store import check_run_id  # noqa: PLC0415 - store imports us

    return check_run_id(value)


IsoTime = Annotated[str, AfterValidator(_iso_time)]
RunId = Annotated[str, AfterValidator(_run_id)]


class OpFigures(TypedDict):
    """One operation's (or the total's) figures, in a phase or an interval."""

    ok: Count
    errors: Count
    error_rate: Share
    throughput: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    latency_us: dict[str, Number | None]
    bytes_in: NotRequired[Count]
    bytes_out: NotRequired[Count]
    late: NotRequired[Count]
    out_of_range: NotRequired[Count]
    errors_by_class: NotRequired[dict[str, Count]]
    error_codes: NotRequired[dict[str, Count]]
    last_errors: NotRequired[dict[str, str]]
    counters: NotRequired[dict[str, Number]]
    hist: NotRequired[str]
    hist_uncorrected: NotRequired[str]


class Phase(TypedDict):
    duration_s: Seconds
    total: OpFigures
    ops: dict[str, OpFigures]


class Verdicts(TypedDict):
    generator_bound: bool
    reason: str | None


class Report(TypedDict):
    profile: str
    protocol: str
    started_at: IsoTime
    partial: bool
    phases: dict[str, Phase]
    verdicts: Verdicts
    target: NotRequired[str]
    stop_reason: NotRequired[str]


class Group(TypedDict):
    name: str


class Plan(TypedDict):
    groups: list[Group]
    interval: NotRequired[Seconds]


class Provenance(TypedDict):
    """Where a run came from; only the version is required (a scripted run has no host)."""

    tool_version: str
    host: NotRequired[str]
    cpu_model: NotRequired[str]
    cpu_count: NotRequired[int | None]
    python: NotRequired[str]
    overrides: NotRequired[dict[str, Any]]
    profile_sha256: NotRequired[str | None]


class Record(TypedDict):
    """One interval of the series."""

    phase: str
    index: Count
    elapsed: Seconds
    duration: Seconds
    ops: dict[str, OpFigures]


class PhaseHistograms(TypedDict):
    hist: str
    hist_uncorrected: NotRequired[str]


class ProcessSample(TypedDict):
    cpu: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    rss: NotRequired[Count]


class HostSample(TypedDict):
    cpu: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ResourceSample(TypedDict):
    """One resource sample (a coarsened one covers ``span`` samples)."""

    elapsed: Seconds
    phase: str
    workers: list[ProcessSample]
    target: ProcessSample | None
    host: HostSample


class Snapshot(TypedDict):
    schema: str
    id: RunId
    created_at: IsoTime
    partial: bool
    provenance: Provenance
    plan: Plan
    report: Report
    series: list[Record]
    histograms: dict[str, dict[str, PhaseHistograms]]
    labels: NotRequired[dict[str, Any]]
    resources: NotRequired[list[ResourceSample]]


@functools.cache
def _adapter() -> TypeAdapter[Snapshot]:
    return TypeAdapter(Snapshot)


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc if part not in ("function-after",)) or "(top)"


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "missing":
        return "missing"
    if kind in ("int_type", "int_from_float"):
        return "expected a whole number"
    if kind in ("dict_type", "typed_dict_type"):
        return "expected an object"
    if kind == "value_error":
        return str(error["ctx"]["error"])
    return str(error["msg"]).replace("Input should be", "expected")


def problem(data: Any) -> str | None:
    """The first way ``data`` is not a valid snapshot, as one line; ``None`` when it is one."""
    if not isinstance(data, dict):
        kind = "null" if data is None else f"a JSON {type(data).__name__}"
        return f"expected a JSON object, found {kind}"
    try:
        _adapter().validate_python(data, strict=True)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"{_where(first['loc'])}: {_message(first)}{more}"
    return _histograms_problem(data["histograms"])


def decoded(encoded: str, where: str) -> HdrHistogram:
    """The histogram ``encoded`` (empty: an empty one); ``ValueError`` naming ``where``."""
    from protobench.engine.metrics import decode  # noqa: PLC0415 - numpy only when read

    try:
        return decode(encoded)
    except Exception as exc:  # hdrh raises a zoo of types for a corrupt encoding
        raise ValueError(f"{where}: not an encoded HdrHistogram ({type(exc).__name__})") from None


def _histograms_problem(histograms: dict[str, dict[str, dict[str, str]]]) -> str | None:
    for phase, ops in histograms.items():
        for op, hists in ops.items():
            for key in ("hist", "hist_uncorrected"):
                try:
                    decoded(hists.get(key, ""), f"histograms.{phase}.{op}.{key}")
                except ValueError as exc:
                    return str(exc)
    return None
