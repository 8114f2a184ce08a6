"""The final report of a run (schema ``protobench.report/1``) and its exit code.

The report is what ``--json`` prints and what the snapshot keeps. Its shape is
documented in docs/outputs/report.md; the verdicts are judged in :mod:`engine.verdicts`.
Exit codes (:func:`exit_code_for`): 0 passed; 1 a threshold or a built-in
check failed; 2 bad input (the CLI's); 3 the run could not complete or measured
nothing: interrupted (Ctrl-C, ``q``, SIGTERM, SIGHUP), the target could not
be started, no worker could run, no session could open, or the sustain phase
completed no exchange; 5 the run passed but its snapshot could not be written
to the store (it went to a temporary location, or nowhere).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from protobench import __version__
from protobench.engine.aggregate import Aggregator
from protobench.engine.bounds import Tally
from protobench.engine.plan import RunPlan
from protobench.engine.report_model import (
    CheckResult,
    ClockReport,
    ClockSource,
    CpuVerdict,
    GeneratorResources,
    HostResources,
    JsonValue,
    LiveVerdicts,
    LoadModel,
    NodeEntry,
    NoticeEntry,
    Report,
    Resources,
    TargetResources,
    ThresholdResult,
    Tool,
    Verdicts,
    WorkerEntry,
)
from protobench.engine.resource_log import ResourceFigures, ResourceLog
from protobench.engine.stacks.cost import overhead
from protobench.engine.stacks.model import TargetProfile, summarize
from protobench.engine.summaries import PhaseSummary
from protobench.engine.thresholds import evaluate_all
from protobench.engine.verdicts import (
    builtin_checks,
    cpu_verdicts,
    delay_findings,
    evaluate_checks,
    incomplete_reason,
)
from protobench.redaction import redact_url
from protobench.targets.base import Announcement
from protobench.vocab.counters import CONNECTS
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.thresholds import Threshold, parse_threshold


def _iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunJudge:
    """Judges a run, so far or whole, the one way: thresholds, built-in checks, CPU verdict.

    The aggregator calls it with each interval's phases so far (the live
    verdicts of :class:`~protobench.engine.events.IntervalUpdate`);
    :func:`build_report` with the final phases.
    """

    thresholds: list[Threshold]
    checks: list[Threshold]
    open_model: bool
    resources: ResourceLog

    @classmethod
    def of(
        cls, plan: RunPlan, resources: ResourceLog, passive: Collection[str] = frozenset()
    ) -> RunJudge:
        """The judge of ``plan``'s run; ``passive`` ops are not expected to exchange anything."""
        thresholds = [parse_threshold(expr) for expr in plan.thresholds]
        active = [g.name for g in plan.groups if g.name not in passive]
        return cls(thresholds, builtin_checks(thresholds, active), plan.model == "open", resources)

    def cpu(self, sustain: PhaseSummary | None, lagging: Tally) -> CpuVerdict:
        figures = self.resources.figures.get("sustain")
        return cpu_verdicts(
            self.open_model,
            sustain,
            host_resources(self.resources.phase("sustain")),
            figures.busy if figures else Tally(),
            lagging,
            figures.host_busy if figures else Tally(),
        )

    def __call__(self, phases: Mapping[str, PhaseSummary], lagging: Tally) -> LiveVerdicts:
        """The verdicts so far: none of the thresholds and checks before sustain has figures."""
        sustain = phases.get("sustain")
        measured = sustain is not None
        return LiveVerdicts(
            thresholds=evaluate_all(self.thresholds, sustain, phases.get("drain"))
            if measured
            else [],
            checks=evaluate_checks(self.checks, phases) if measured else [],
            cpu=self.cpu(sustain, lagging),
        )


PENDING = Verdicts(generator_bound=False)
"""The verdicts of a report being built, before they are judged."""


def build_report(
    *,
    plan: RunPlan,
    aggregator: Aggregator,
    announcement: Announcement | None,
    resources: ResourceLog,
    notices: Sequence[NoticeEntry],
    workers: Sequence[WorkerEntry],
    stop_reason: str,
    started: float,
    target_rss_baseline: int | None,
    target_rss_peak: int | None,
    findings: list[str] | None = None,
    passive: frozenset[str] = frozenset(),
    labels: Mapping[str, JsonValue] | None = None,
    nodes: Sequence[NodeEntry] | None = None,
    per_connection: bool = True,
    profile: TargetProfile | None = None,
    clock: ClockReport | None = None,
    protocols: Mapping[str, Mapping[str, int]] | None = None,
) -> Report:
    """The report of a run.

    ``notices`` are the run's notices; ``findings`` the protocol plugin's
    diagnosis; ``passive`` the groups whose op exchanges nothing by design (no
    exchange is expected of them); ``labels`` (a sweep's) and ``nodes`` (a
    Ray run's) are in the report when given; so is the summary of the target's
    ``profile`` (``run --profile-target``); ``clock`` is where the exchanges' times came
    from (:func:`clock_report`); ``per_connection`` whether the target's memory growth is
    its connections' (the plugin's ``memory_per_connection``); ``protocols`` each op's
    sessions by the protocol they got (:func:`protocols_report`).
    """
    report = Report(
        tool=Tool(name="protobench", version=__version__),
        profile=plan.profile,
        protocol=plan.protocol,
        description=plan.description,
        target=redact_url(announcement.url) if announcement else redact_url(plan.target or ""),
        target_kind=announcement.kind if announcement else None,
        model=LoadModel(
            type=plan.model,
            sessions=plan.sessions,
            rate=plan.rate,
            ramp_to=plan.ramp_to if plan.rate is not None else None,
            requests=plan.requests,
            connections=(
                sum(g.connections for g in plan.groups)
                if any(g.per_connection > 1 for g in plan.groups)
                else None
            ),
        ),
        clock=clock,
        protocols={op: dict(counts) for op, counts in protocols.items()} if protocols else None,
        processes=len(workers),
        warmup_s=plan.warmup,
        duration_s=plan.duration,
        started_at=_iso(started),
        partial=stop_reason != "completed",
        stop_reason=stop_reason,
        phases=aggregator.phases(),
        resources=resource_summary(
            resources,
            target_rss_baseline,
            target_rss_peak,
            plan,
            _connects(aggregator),
            per_connection=per_connection,
        ),
        target_profile=summarize(profile, overhead(profile)) if profile else None,
        workers=list(workers),
        notices=list(notices),
        verdicts=PENDING,
        labels=dict(labels) if labels else None,
        nodes=list(nodes) if nodes is not None else None,
    )
    judge = RunJudge.of(plan, resources, passive)
    report = replace(
        report,
        thresholds=evaluate_all(judge.thresholds, report.sustain, report.phases.get("drain")),
    )
    report = replace(
        report,
        verdicts=verdicts(
            report,
            judge.cpu(report.sustain, aggregator.lagging.get("sustain", Tally())),
            evaluate_checks(judge.checks, report.phases),
            findings or [],
            passive,
        ),
    )
    if not report.nothing_measured:
        return report
    # no figure to judge: none evaluated, none passed (and the exit code is 3)
    unjudged = [ThresholdResult(expr=t.expr, value=None, ok=False) for t in judge.thresholds]
    return replace(
        report,
        thresholds=unjudged,
        verdicts=replace(report.verdicts, thresholds_passed=not unjudged),
    )


def protocols_report(hellos: Sequence[Mapping[str, object]]) -> dict[str, dict[str, int]] | None:
    """Each op's sessions by the protocol they got, summed over the workers' ``HELLO``
    (``protocols``); ``None`` when no session named one."""
    out: dict[str, dict[str, int]] = {}
    for hello in hellos:
        groups = hello.get("protocols")
        for op, counts in groups.items() if isinstance(groups, Mapping) else ():
            into = out.setdefault(str(op), {})
            for name, count in counts.items():
                into[str(name)] = into.get(str(name), 0) + int(count)
    return out or None


def clock_report(
    setting: str, hellos: Sequence[Mapping[str, object]], protocol: str
) -> tuple[ClockReport, str | None]:
    """Where the run's times come from, from the workers' ``HELLO``; and a notice's line when
    the kernel's clock was asked for and not every session has it (``None`` otherwise).

    Each ``HELLO`` has ``clock``: per group, its open ``sessions`` and how many read
    the kernel's receive (``kernel_receive``) and send (``kernel_send``) stamps;
    ``clock_reason``: why the platform gives none, when it does not.
    """
    sessions = receive = send = 0
    reasons = set()
    for hello in hellos:
        groups = hello.get("clock")
        for counts in groups.values() if isinstance(groups, Mapping) else ():
            sessions += int(counts.get("sessions", 0))
            receive += int(counts.get("kernel_receive", 0))
            send += int(counts.get("kernel_send", 0))
        if reason := hello.get("clock_reason"):
            reasons.add(str(reason))
    report = ClockReport(
        setting="kernel" if setting == "kernel" else "user",
        receive=_source(receive, sessions),
        send=_source(send, sessions),
    )
    if report.setting != "kernel" or not sessions or (receive == send == sessions):
        return report, None
    user = "the engine's clock in user space"
    if reasons:
        why = f"the kernel's timestamps are not available here ({'; '.join(sorted(reasons))})"
        return report, f"{why}: exchange times are {user}"
    if not receive:
        return report, (
            f"the {protocol} plugin does not read the kernel's timestamps:"
            f" exchange times are {user}"
        )
    if receive < sessions:
        return report, (
            f"{receive} of {sessions} sessions read the kernel's timestamps (TLS connections"
            f" and plugins without them do not): the others' times are {user}"
        )
    return report, (
        "the kernel gives no send timestamps here: a request's time is taken in user space"
        " immediately before its send"
    )


def _source(kernel: int, sessions: int) -> ClockSource:
    if sessions and kernel == sessions:
        return "kernel"
    return "mixed" if kernel else "user"


def _connects(aggregator: Aggregator) -> int:
    """Connections opened over the run (the workers' ``connects`` counter), 0 when not counted."""
    return sum(
        acc.counters.get(CONNECTS, 0)
        for accs in aggregator.totals.values()
        for acc in accs.values()
    )


def host_resources(figures: ResourceFigures) -> HostResources:
    """The host's figures over the samples of ``figures``."""
    shares = figures.host_shares()
    return HostResources(
        cpu_peak=figures.host_cpu_peak,
        cpu_mean=shares["cpu_mean"],
        workers_share_mean=shares["workers_share_mean"],
        target_share_mean=shares["target_share_mean"],
        others_share_mean=shares["others_share_mean"],
        cpus=figures.host_cpus,
        mem_used_peak=figures.host_mem_used_peak,
    )


def resource_summary(
    resources: ResourceLog,
    target_rss_baseline: int | None,
    target_rss_peak: int | None,
    plan: RunPlan,
    connects: int = 0,
    *,
    per_connection: bool = True,
) -> Resources:
    """Peaks and means of the generator, the target and the host over sustain.

    Where the growth is the connections' (``per_connection``), the target's RSS
    growth is divided by the connections opened (``rss_per_connection``) when
    the workers count them, else by the sessions (``rss_per_session``); else
    it is not divided (a UDP target's, a broker's message queues).
    """
    figures = resources.phase("sustain")
    generator = GeneratorResources(
        worker_cpu_peak=figures.worker_cpu_peak,
        worker_cpu_mean=figures.worker_cpu_mean,
        rss_peak=figures.worker_rss_peak,
    )
    target: TargetResources | None = None
    if figures.target_samples or target_rss_baseline is not None:
        target = TargetResources(
            pid=figures.target_pid,
            cpu_peak=figures.target_cpu_peak,
            cpu_mean=figures.target_cpu_mean,
            rss_baseline=target_rss_baseline,
            rss_peak=target_rss_peak,
            fds_peak=figures.target_fds_peak,
            threads_peak=figures.target_threads_peak,
        )
        if (
            target_rss_baseline is not None
            and target_rss_peak is not None
            and per_connection
            and plan.sessions
        ):
            growth = target_rss_peak - target_rss_baseline
            if connects:
                target = replace(
                    target, connections=connects, rss_per_connection=round(growth / connects, 1)
                )
            else:
                target = replace(target, rss_per_session=round(growth / plan.sessions, 1))
    return Resources(generator=generator, target=target, host=host_resources(figures))


def verdicts(
    report: Report,
    cpu: CpuVerdict,
    checks: list[CheckResult],
    findings: list[str],
    passive: frozenset[str] = frozenset(),
) -> Verdicts:
    """The run's verdicts (see :mod:`engine.verdicts`): ``cpu`` judged on the sustain tallies."""
    incomplete = incomplete_reason(report, passive)
    if incomplete is not None:  # nothing measured: nothing to check
        checks = []
    return Verdicts(
        **asdict(cpu),
        thresholds_passed=all(t.ok for t in report.thresholds),
        checks=checks,
        checks_passed=all(c.ok for c in checks),
        findings=[*delay_findings(report.sustain, report.model.type == "open"), *findings],
        complete=incomplete is None,
        incomplete_reason=incomplete,
    )


def exit_code_for(report: Report) -> ExitCode:
    """The exit code of a run (see the module's docstring): :attr:`Report.exit_code`."""
    return report.exit_code
