"""The final report of a run (schema ``protobench.report/1``) and its exit code.

The report is what ``--json`` prints and what the snapshot keeps. Its shape is
documented in the README; the verdicts are judged in :mod:`engine.verdicts`.
Exit codes (:func:`exit_code_for`): 0 passed; 1 a threshold or a built-in
check failed; 2 bad input (the CLI's); 3 the run could not complete or measured
nothing: interrupted (Ctrl-C, ``q``, SIGTERM, SIGHUP), the target could not
be started, no worker could run, no session could open, or the sustain phase
completed no exchange; 5 the run passed but its snapshot could not be written
to the store (it went to a temporary location, or nowhere).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from protobench import __version__
from protobench.engine.aggregate import Aggregator
from protobench.engine.bounds import Tally
from protobench.engine.plan import RunPlan
from protobench.engine.resource_log import ResourceLog
from protobench.engine.thresholds import evaluate_all
from protobench.engine.verdicts import (
    builtin_checks,
    cpu_verdicts,
    evaluate_checks,
    incomplete_reason,
)
from protobench.redaction import redact_url
from protobench.targets.base import Announcement
from protobench.vocab.counters import CONNECTS
from protobench.vocab.thresholds import parse_threshold

SCHEMA = "protobench.report/1"

EXIT_OK = 0
EXIT_THRESHOLDS = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_NOT_SAVED = 5


def _iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat(timespec="seconds")


def build_report(
    *,
    plan: RunPlan,
    aggregator: Aggregator,
    announcement: Announcement | None,
    resources: ResourceLog,
    notices: list[dict[str, Any]],
    workers: list[dict[str, Any]],
    stop_reason: str,
    started: float,
    target_rss_baseline: int | None,
    target_rss_peak: int | None,
    findings: list[str] | None = None,
    passive: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The report of a run.

    ``findings`` are the protocol plugin's diagnosis; ``passive`` the groups
    whose op exchanges nothing by design (no exchange is expected of them).
    """
    phases = {}
    for phase in ("warmup", "sustain", "drain"):
        section = aggregator.phase_report(phase)
        if section is not None:
            phases[phase] = section
    model: dict[str, Any] = {"type": plan.model, "sessions": plan.sessions}
    if plan.rate is not None:
        model["rate"] = plan.rate
        if plan.ramp_to is not None:
            model["ramp_to"] = plan.ramp_to
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "tool": {"name": "protobench", "version": __version__},
        "profile": plan.profile,
        "protocol": plan.protocol,
        "description": plan.description,
        "target": redact_url(announcement.url) if announcement else redact_url(plan.target or ""),
        "target_kind": announcement.kind if announcement else None,
        "model": model,
        "processes": len(workers),
        "warmup_s": plan.warmup,
        "duration_s": plan.duration,
        "started_at": _iso(started),
        "partial": stop_reason != "completed",
        "stop_reason": stop_reason,
        "phases": phases,
        "resources": resource_summary(
            resources, target_rss_baseline, target_rss_peak, plan, _connects(aggregator)
        ),
        "workers": workers,
        "notices": notices,
    }
    thresholds = [parse_threshold(expr) for expr in plan.thresholds]
    report["thresholds"] = evaluate_all(thresholds, report)
    active = [name for name in aggregator.op_names if name not in passive]
    checks = builtin_checks(thresholds, active)
    sustain = resources.figures.get("sustain")
    report["verdicts"] = verdicts(
        report,
        sustain.busy if sustain else Tally(),
        aggregator.lagging.get("sustain", Tally()),
        sustain.host_busy if sustain else Tally(),
        evaluate_checks(checks, report),
        findings or [],
        passive,
    )
    return report


def _connects(aggregator: Aggregator) -> int:
    """Connections opened over the run (the workers' ``connects`` counter), 0 when not counted."""
    return sum(
        acc.counters.get(CONNECTS, 0)
        for accs in aggregator.totals.values()
        for acc in accs.values()
    )


def resource_summary(
    resources: ResourceLog,
    target_rss_baseline: int | None,
    target_rss_peak: int | None,
    plan: RunPlan,
    connects: int = 0,
) -> dict[str, Any]:
    """Peaks and means of the generator, the target and the host over sustain.

    The target's RSS growth is divided by the connections opened
    (``rss_per_connection``) when the workers count them, else by the
    sessions (``rss_per_session``).
    """
    figures = resources.phase("sustain")
    generator = {
        "worker_cpu_peak": figures.worker_cpu_peak,
        "worker_cpu_mean": figures.worker_cpu_mean,
        "rss_peak": figures.worker_rss_peak,
    }
    target: dict[str, Any] | None = None
    if figures.target_samples or target_rss_baseline is not None:
        target = {
            "pid": figures.target_pid,
            "cpu_peak": figures.target_cpu_peak,
            "cpu_mean": figures.target_cpu_mean,
            "rss_baseline": target_rss_baseline,
            "rss_peak": target_rss_peak,
            "fds_peak": figures.target_fds_peak,
            "threads_peak": figures.target_threads_peak,
        }
        if target_rss_baseline is not None and target_rss_peak is not None and plan.sessions:
            growth = target_rss_peak - target_rss_baseline
            if connects:
                target["connections"] = connects
                target["rss_per_connection"] = round(growth / connects, 1)
            else:
                target["rss_per_session"] = round(growth / plan.sessions, 1)
    host = {
        "cpu_peak": figures.host_cpu_peak,
        **figures.host_shares(),
        "cpus": figures.host_cpus,
        "mem_used_peak": figures.host_mem_used_peak,
    }
    return {"generator": generator, "target": target, "host": host}


def verdicts(
    report: dict[str, Any],
    busy_samples: Tally,
    lagging_intervals: Tally,
    host_busy: Tally | None = None,
    checks: list[dict[str, Any]] | None = None,
    findings: list[str] | None = None,
    passive: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The run's verdicts (see :mod:`engine.verdicts`), judged on the sustain tallies."""
    incomplete = incomplete_reason(report, passive)
    if incomplete is not None:  # nothing measured: nothing to check
        checks = []
    return {
        **cpu_verdicts(report, busy_samples, lagging_intervals, host_busy or Tally()),
        "thresholds_passed": all(t["ok"] for t in report["thresholds"]),
        "checks": checks or [],
        "checks_passed": all(c["ok"] for c in checks or []),
        "findings": list(findings or []),
        "complete": incomplete is None,
        "incomplete_reason": incomplete,
    }


def exit_code_for(report: dict[str, Any]) -> int:
    """The exit code of a run (see the module's docstring).

    A ``snapshot_error`` in the report means the snapshot is not in the store.
    """
    verdict = report["verdicts"]
    if report["partial"] or "sustain" not in report["phases"] or not verdict.get("complete", True):
        return EXIT_INCOMPLETE
    if not verdict["thresholds_passed"] or not verdict.get("checks_passed", True):
        return EXIT_THRESHOLDS
    return EXIT_NOT_SAVED if report.get("snapshot_error") else EXIT_OK
