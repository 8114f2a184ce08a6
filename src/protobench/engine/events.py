"""The events a run emits, in order, to every subscriber (JSON/NDJSON output, TUI, snapshot).

Subscribers receive plain frozen dataclasses; none of them can change the run.
Commands go the other way through :class:`protobench.engine.controller.Controller`
methods (``pause``, ``resume``, ``set_rate_factor``, ``stop``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from protobench.engine.report_model import JsonValue, LiveVerdicts, NoticeValue, Report
from protobench.engine.stacks.model import FunctionShare
from protobench.engine.summaries import OpSummary, PhaseSummary


@dataclass(frozen=True)
class RunStarted:
    """Workers are up and sessions are open; the clock starts."""

    plan: dict[str, JsonValue]
    """The plan as :meth:`protobench.engine.plan.RunPlan.to_dict` gives it."""
    target: str
    target_kind: str
    workers: int
    sessions_opened: int
    sessions_failed: int
    log_dir: str


@dataclass(frozen=True)
class PhaseChanged:
    """The run entered ``phase`` (warmup, sustain, drain) at ``elapsed`` seconds."""

    phase: str
    elapsed: float


@dataclass(frozen=True)
class IntervalUpdate:
    """One merged interval of all workers, and the run so far.

    ``ops`` maps each operation to its summary over the interval (with
    ``hist``, its encoded histogram, in the open model ``hist_uncorrected``, with the
    kernel clock ``hist_delay``, and the generator's delay ``generator_delay_us``, for a
    monitor to show beside the verdicts); ``total`` merges all operations. ``elapsed``
    is the run time at the interval's end. ``phase_summary`` is the interval's phase
    so far (what the report's phase will be if the phase ends now) and ``verdicts``
    the thresholds, built-in checks and CPU verdict so far, judged like the report's
    (``None`` when the run has no judge: a scripted one).
    """

    phase: str
    index: int
    elapsed: float
    duration: float
    ops: dict[str, OpSummary]
    total: OpSummary
    lag_ms: float
    inflight: int
    worker_lag_ms: dict[int, float] = field(default_factory=dict)
    """Each worker's event-loop lag in the interval (``lag_ms`` is the largest)."""
    phase_summary: PhaseSummary | None = None
    verdicts: LiveVerdicts | None = None


class ProcessSample(TypedDict):
    """A process's resources (:func:`protobench.engine.resources.sample_process`)."""

    pid: int
    cpu: float
    rss: int
    threads: int
    fds: NotRequired[int]
    fd_limit: NotRequired[int]
    node: NotRequired[str]
    """The Ray node whose agent sampled this worker (Ray runs only)."""
    off_host: NotRequired[bool]
    """The worker runs on another machine: not in this host's CPU shares."""


class HostSample(TypedDict):
    """The host's CPU (% of all its cores), cores and memory (bytes)."""

    cpu: float
    cpus: int
    mem_used: int
    mem_total: int


@dataclass(frozen=True)
class ResourceSample:
    """CPU and memory of the workers, the target process and the host."""

    elapsed: float
    workers: list[ProcessSample]
    target: ProcessSample | None
    host: HostSample


@dataclass(frozen=True)
class ProfileUpdate:
    """The target's top functions over the last chunk of its profile (``run --profile-target``).

    ``samples`` of the chunk, ``running`` those of a running thread; ``top`` the
    functions with the largest self share of the running samples.
    """

    elapsed: float
    tool: str
    seconds: float
    samples: int
    running: int
    top: list[FunctionShare]


@dataclass(frozen=True)
class Notice:
    """Something the user should know: a worker died, the target stopped, a rate change."""

    kind: str
    message: str
    elapsed: float
    details: dict[str, NoticeValue] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFinished:
    """The final report (the ``--json`` output) and where the snapshot was saved."""

    report: Report
    exit_code: int


Event = (
    RunStarted
    | PhaseChanged
    | IntervalUpdate
    | ResourceSample
    | ProfileUpdate
    | Notice
    | RunFinished
)
