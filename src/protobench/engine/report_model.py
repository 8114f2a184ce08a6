"""The typed report of a run (schema ``protobench.report/1``): its parts, JSON and loader.

:class:`Report` is what ``--json`` prints, the ``report`` line of ``--ndjson``
and what a snapshot keeps; the engine builds it once
(:func:`protobench.engine.report.build_report`). Its JSON is its
serialisation (:func:`report_to_json`, :func:`to_plain`): each field is a key
in the order declared; a field whose metadata is
:data:`~protobench.engine.summaries.OMIT_NONE` is left out while ``None``, and a
notice's ``details`` are keys of the notice itself. :func:`load_report` reads a
report back (a snapshot's, ``diff``'s, ``report``'s, a replay's) with pydantic,
imported only then; a bad field is a :class:`ReportError` of one line naming
its path (``phases.sustain.total.ok: expected a whole number``).

Defaults are those of reports written before a field existed, so an old
snapshot loads.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any, Literal

from protobench.engine.stacks.model import ProfileSummary
from protobench.engine.summaries import OMIT_NONE, PhaseSummary
from protobench.vocab.exceptions import BadInput, ExitCode
from protobench.vocab.units import plain_number

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_core import SchemaValidator

type JsonValue = str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None
"""A JSON value (the plan, labels: free-form data of their own schema)."""

SCHEMA = "protobench.report/1"
FLATTEN: dict[str, Any] = {"flatten": True}
"""Field metadata: the field's mapping is merged into its object's keys."""
NoticeValue = str | int | float | bool | None
"""A notice's detail: a worker's index, an exit code, a pid, a log's tail..."""
NO_SESSION = "no-session"
"""The ``stop_reason`` of a run stopped early because none of its sessions could open."""
NO_SESSION_NOTICE = "sessions"
"""The kind of the notice that says why such a run stopped (one line)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str = "protobench"
    version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadModel:
    """``closed`` (sessions back to back) or ``open`` (a rate of arrivals, maybe ramped);
    ``requests``: the exchanges that end the sustain (``-n``), when counted; ``connections``:
    the connections the sessions share, when some share one (HTTP/2's streams)."""

    type: Literal["closed", "open"]
    sessions: int = 0
    rate: float | None = field(default=None, metadata=OMIT_NONE)
    ramp_to: float | None = field(default=None, metadata=OMIT_NONE)
    requests: int | None = field(default=None, metadata=OMIT_NONE)
    connections: int | None = field(default=None, metadata=OMIT_NONE)


type ClockSource = Literal["kernel", "user", "mixed"]
"""Where the times of a run's exchanges came from: the kernel's socket timestamps, the
engine's own reads of the clock in user space, or some sessions each."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockReport:
    """The run's clock: the setting asked for, and where receive and send times came from.

    ``receive`` ``kernel``: each reply's time is the kernel's receive stamp of the
    packet that completed it; ``send`` ``kernel``: each request's time is the
    kernel's transmit stamp of its first packet, ``user`` the engine's time just
    before the send syscall. ``mixed``: some sessions each (e.g. TLS connections
    are read in user space).
    """

    setting: Literal["kernel", "user"]
    receive: ClockSource
    send: ClockSource


def describe_model(model: LoadModel, changes: Sequence[tuple[float, float]] = ()) -> str:
    """``closed model, 50 sessions`` or ``open model, 2,000/s -> 5,000/s over 40 sessions``
    (``on 5 connections`` when sessions share them, and ``, 1,000 requests`` when a request
    count ends the sustain): the summary's line and the HTML report's header. With live rate
    ``changes`` (run seconds, factor of the base rate) each one after it:
    ``; rate changed live: 2,200/s (base +10%) at 12.3s``."""
    count = "" if model.requests is None else f", {model.requests:,} requests"
    if model.connections is not None:
        count = f" on {model.connections} connections{count}"
    if model.type == "closed":
        return f"closed model, {model.sessions} sessions{count}"
    rate = "an unknown rate" if model.rate is None else f"{plain_number(model.rate)}/s"
    if model.ramp_to is not None:
        rate += f" -> {plain_number(model.ramp_to)}/s"
    text = f"open model, {rate} over {model.sessions} sessions{count}"
    if changes and model.rate is not None:
        steps = ", ".join(
            f"{plain_number(model.rate * factor)}/s (base {(factor - 1) * 100:+.0f}%) at {at:.1f}s"
            for at, factor in changes
        )
        text += f"; rate changed live: {steps}"
    return text


def describe_clock(clock: ClockReport | None) -> str:
    """``kernel clock`` (with what was not: ``kernel clock (send: user)``), ``user clock``,
    or "" for a report from before the clocks (the summary's line, the HTML report's header)."""
    if clock is None:
        return ""
    if clock.receive == clock.send:
        return f"{clock.receive} clock"
    return f"{clock.receive} clock (send: {clock.send})"


def describe_connections(protocols: Mapping[str, int], streams: float | None) -> str:
    """``protocol: h2 (500 sessions), 9.8 streams in flight per connection``: what an op's
    sessions negotiated and, for HTTP/2, its streams in flight per connection ("" for
    neither; the summary's line, the HTML report's table)."""
    parts = []
    if protocols:
        got = ", ".join(f"{name} ({count:,} sessions)" for name, count in protocols.items())
        parts.append(f"protocol: {got}")
    if streams is not None:
        parts.append(f"{streams:g} streams in flight per connection")
    return ", ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratorResources:
    """The workers' CPU (% of a core) peak and mean over sustain, and their RSS peak (bytes)."""

    worker_cpu_peak: float | None = None
    worker_cpu_mean: float | None = None
    rss_peak: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetResources:
    """The target process over sustain; its RSS growth per connection (or per session)."""

    pid: int | None = None
    cpu_peak: float | None = None
    cpu_mean: float | None = None
    rss_baseline: int | None = None
    rss_peak: int | None = None
    fds_peak: int | None = None
    threads_peak: int | None = None
    connections: int | None = field(default=None, metadata=OMIT_NONE)
    rss_per_connection: float | None = field(default=None, metadata=OMIT_NONE)
    rss_per_session: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostResources:
    """The host over sustain: CPU peak and means (% of its cores, split by who), memory."""

    cpu_peak: float | None = None
    cpu_mean: float | None = None
    workers_share_mean: float | None = None
    target_share_mean: float | None = None
    others_share_mean: float | None = None
    cpus: int | None = None
    mem_used_peak: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Resources:
    generator: GeneratorResources = field(default_factory=GeneratorResources)
    target: TargetResources | None = None
    host: HostResources = field(default_factory=HostResources)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerEntry:
    """One worker process: how it ended, its sessions, its log (and its Ray node)."""

    worker: int
    pid: int | None = None
    exit_code: int | None = None
    completed: bool = False
    error: str | None = None
    sessions_opened: int = 0
    sessions_failed: int = 0
    log: str = ""
    node: str | None = field(default=None, metadata=OMIT_NONE)


NOTICE_KEYS = ("kind", "message", "elapsed")
"""A notice's own keys; the others are its details."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NoticeEntry:
    """Something the user should know, at ``elapsed`` seconds; ``details`` are its own keys."""

    kind: str
    message: str
    elapsed: float = 0.0
    details: dict[str, NoticeValue] = field(default_factory=dict, metadata=FLATTEN)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdResult:
    """A threshold judged on sustain: the observed value (``None``: absent) and whether it held."""

    expr: str
    value: float | None
    ok: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """A built-in check judged on the run; a failed one says why in a sentence."""

    expr: str
    value: float | None
    ok: bool
    op: str | None = None
    observed: str = ""
    reason: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuVerdict:
    """What limited the run: our processes (``generator_bound``) or the busy host."""

    generator_bound: bool
    reason: str | None = None
    host_saturated: bool = False
    host_reason: str | None = None
    host_saturated_share: float = 0.0
    late_fraction: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveVerdicts:
    """The verdicts of a run so far (in each interval event), judged like the report's.

    ``thresholds`` and ``checks`` on the sustain phase so far (``[]`` before
    it has figures), ``cpu`` on its resource samples and intervals so far.
    """

    thresholds: list[ThresholdResult]
    checks: list[CheckResult]
    cpu: CpuVerdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdicts:
    """The run's verdicts (:mod:`protobench.engine.verdicts`): the CPU's, then the rest."""

    generator_bound: bool
    reason: str | None = None
    host_saturated: bool = False
    host_reason: str | None = None
    host_saturated_share: float = 0.0
    late_fraction: float = 0.0
    thresholds_passed: bool = True
    checks: list[CheckResult] = field(default_factory=list)
    checks_passed: bool = True
    findings: list[str] = field(default_factory=list)
    complete: bool = True
    incomplete_reason: str | None = None

    @property
    def cpu(self) -> CpuVerdict:
        """The CPU's verdict, whose fields these verdicts begin with (flat, as in the JSON)."""
        return CpuVerdict(**{f.name: getattr(self, f.name) for f in fields(CpuVerdict)})


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeResourceSummary:
    samples: int = 0
    workers_cpu_mean: float | None = None
    workers_cpu_peak: float | None = None
    workers_rss_peak: int | None = None
    host_cpu_mean: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeEntry:
    """A Ray node of a distributed run: identity, versions, clock offset, workers, resources."""

    id: str
    host: str | None = None
    address: str | None = None
    cpus: int | None = None
    python: str | None = None
    ray: str | None = None
    protobench: str | None = None
    clock_offset: float = 0.0
    workers: list[int] = field(default_factory=list)
    lost: str | None = None
    resources: NodeResourceSummary = field(default_factory=NodeResourceSummary)


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """The final report of a run (see docs/outputs/report.md)."""

    schema: str = SCHEMA
    tool: Tool = field(default_factory=Tool)
    profile: str
    protocol: str
    description: str = ""
    target: str = ""
    target_kind: str | None = None
    model: LoadModel = field(default_factory=lambda: LoadModel(type="closed"))
    clock: ClockReport | None = field(default=None, metadata=OMIT_NONE)
    """Absent in reports from before the kernel's clock (their times were user space)."""
    protocols: dict[str, dict[str, int]] | None = field(default=None, metadata=OMIT_NONE)
    """Per op, its sessions by the protocol their connections got (HTTP/2 runs: ``h2``,
    ``h2c``, ``http/1.1`` after an ALPN fallback); absent when no plugin names one."""
    processes: int = 0
    warmup_s: float = 0.0
    duration_s: float = 0.0
    started_at: str
    partial: bool
    stop_reason: str = "completed"
    phases: dict[str, PhaseSummary]
    resources: Resources = field(default_factory=Resources)
    target_profile: ProfileSummary | None = field(default=None, metadata=OMIT_NONE)
    """Where the target spent sustain (``run --profile-target``), summed up."""
    workers: list[WorkerEntry] = field(default_factory=list)
    notices: list[NoticeEntry] = field(default_factory=list)
    thresholds: list[ThresholdResult] = field(default_factory=list)
    verdicts: Verdicts
    labels: dict[str, JsonValue] | None = field(default=None, metadata=OMIT_NONE)
    nodes: list[NodeEntry] | None = field(default=None, metadata=OMIT_NONE)
    snapshot: str | None = field(default=None, metadata=OMIT_NONE)
    """Where the snapshot was written; ``null`` beside a ``snapshot_error`` when nowhere."""
    snapshot_error: str | None = field(default=None, metadata=OMIT_NONE)

    @property
    def sustain(self) -> PhaseSummary | None:
        return self.phases.get("sustain")

    @property
    def exit_code(self) -> ExitCode:
        """The run's exit code (:mod:`protobench.engine.report` says which is when).

        A ``snapshot_error`` in the report means the snapshot is not in the store.
        """
        verdict = self.verdicts
        if self.partial or self.sustain is None or not verdict.complete:
            return ExitCode.INCOMPLETE
        if not verdict.thresholds_passed or not verdict.checks_passed:
            return ExitCode.FAILED
        return ExitCode.NOT_SAVED if self.snapshot_error else ExitCode.OK

    @property
    def nothing_measured(self) -> bool:
        """The run measured nothing that can be judged (``NOTHING MEASURED``): it completed
        so, or it stopped early because no session could open. Its thresholds are not
        evaluated (each ``ok: false``, ``value: null``)."""
        return self.stop_reason == NO_SESSION or not (self.partial or self.verdicts.complete)


class ReportError(BadInput, ValueError):
    """A report that cannot be read: one line naming the bad field's path."""


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, bool, bool], ...]:
    """(name, omitted while None, flattened) of each field of a dataclass, in order."""
    return tuple(
        (f.name, bool(f.metadata.get("omit_none")), bool(f.metadata.get("flatten")))
        for f in fields(cls)
    )


def to_plain(value: Any) -> Any:
    """``value`` (a report, a part of one, an event) as JSON values: dicts, lists, scalars."""
    if is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for name, omit, flatten in _fields(type(value)):
            item = getattr(value, name)
            if flatten:
                out.update((k, to_plain(v)) for k, v in item.items())
            elif not (omit and item is None and _omitted(value, name)):
                out[name] = to_plain(item)
        return out
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def _omitted(owner: object, name: str) -> bool:
    """A ``None`` field left out; a report's ``snapshot`` stays (``null``) beside its error."""
    return not (name == "snapshot" and isinstance(owner, Report) and owner.snapshot_error)


def report_to_json(report: Report, indent: bool = False) -> bytes:
    """The report's JSON (``--json`` indents it by two spaces)."""
    import orjson  # noqa: PLC0415 - not on the --help path

    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(to_plain(report), option=option, default=str)


@functools.cache
def _adapter() -> TypeAdapter[Report]:
    from pydantic import TypeAdapter  # noqa: PLC0415 - pydantic only when a report is read

    return TypeAdapter(Report)


def nested_notices(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with each notice's keys beyond kind, message and elapsed moved into details."""
    notices = data.get("notices")
    if not isinstance(notices, list):
        return dict(data)
    return {
        **data,
        "notices": [
            {
                **{k: v for k, v in n.items() if k in NOTICE_KEYS},
                "details": {k: v for k, v in n.items() if k not in NOTICE_KEYS},
            }
            if isinstance(n, dict)
            else n
            for n in notices
        ],
    }


def load_report(data: object, where: str = "") -> Report:
    """The typed report of parsed JSON ``data``; :class:`ReportError` naming a bad field.

    Validated strictly as JSON (a count is a whole number, not ``"5"``). ``where``
    is the report's own path, put before the field's (``report`` in a snapshot).
    """
    if not isinstance(data, Mapping):
        kind = "null" if data is None else f"a JSON {type(data).__name__}"
        raise ReportError(f"{where or 'a report'}: expected a JSON object, found {kind}")
    return validated(_adapter(), nested_notices(data), where)


def validated[T](adapter: TypeAdapter[T], data: object, where: str) -> T:
    """Parsed JSON ``data`` as ``adapter``'s type, validated strictly as JSON.

    The one way a typed part of a report or snapshot is read back; a bad field
    is a :class:`ReportError` of one line naming its path after ``where``.
    Every list and object stops at its first bad item (:func:`_fail_fast`), so a
    file of millions of wrong items costs no more than one.
    """
    import orjson  # noqa: PLC0415 - not on the --help path
    from pydantic import ValidationError  # noqa: PLC0415 - pydantic only when a report is read

    try:
        text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError as exc:  # a whole number beyond 64 bits, which no field can hold
        raise ReportError(f"{where or '(top)'}: a value out of range ({exc})") from None
    try:
        value: T = _fail_fast(adapter).validate_json(text, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        first = errors[0]
        path = ".".join(str(part) for part in (where, *first["loc"]) if part != "") or "(top)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ReportError(f"{path}: {_message(first)}{more}") from None
    return value


@functools.cache
def _fail_fast(adapter: TypeAdapter[Any]) -> SchemaValidator:
    """``adapter``'s validator, but every list and object in it stops at its first bad item.

    Pydantic collects every error by default: a snapshot of 12 million empty op summaries
    took 54 s and 9 GB to validate, and as much again to list its errors.
    """
    from pydantic_core import SchemaValidator  # noqa: PLC0415 - pydantic only when read

    schema = copy.deepcopy(adapter.core_schema)
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in ("list", "dict"):
                node["fail_fast"] = True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return SchemaValidator(schema)  # the types' own configs are in their schemas


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "missing":
        return "missing"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return "expected a whole number"
    if kind in ("dict_type", "dataclass_type", "model_type"):
        return "expected an object"
    return str(error["msg"]).replace("Input should be", "expected")
