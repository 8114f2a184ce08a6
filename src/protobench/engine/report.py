"""The final report of a run (schema ``protobench.report/1``) and its exit code.

The report is what ``--json`` prints and what the snapshot keeps. Its shape is
documented in the README. Verdicts: ``generator_bound`` is set, with the
reason, when the workers, not the target, were the limit, so the figures
describe the generator (the bounds are in :mod:`engine.bounds`: a worker's CPU,
in the open model only while arrivals also found no free session; the
open-model driver's own lateness; event-loop lag). Exit codes: 0 passed, 1 a
threshold failed, 3 the run could not complete: it was interrupted (Ctrl-C,
``q``), the target could not be started, or no worker could run (2, bad input,
is the CLI's).
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from protobench import __version__
from protobench.engine.aggregate import Aggregator
from protobench.engine.bounds import (
    BEHIND,
    BEHIND_BOUND_MIN,
    BEHIND_BOUND_SHARE,
    BEHIND_NS,
    CPU_BOUND_PERCENT,
    CPU_BOUND_SHARE,
    LAG_BOUND_MS,
    LAG_BOUND_SHARE,
    LATE_BOUND_SHARE,
    Tally,
)
from protobench.engine.plan import RunPlan
from protobench.engine.resource_log import ResourceLog
from protobench.engine.thresholds import evaluate_all, parse_threshold
from protobench.targets.base import Announcement

SCHEMA = "protobench.report/1"

EXIT_OK = 0
EXIT_THRESHOLDS = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3


def redact_url(url: str) -> str:
    """The URL without a password in its user info."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:<secret>@{parts.hostname}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


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
) -> dict[str, Any]:
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
        "resources": resource_summary(resources, target_rss_baseline, target_rss_peak, plan),
        "workers": workers,
        "notices": notices,
    }
    thresholds = [parse_threshold(expr) for expr in plan.thresholds]
    report["thresholds"] = evaluate_all(thresholds, report)
    report["verdicts"] = verdicts(
        report,
        resources.figures["sustain"].busy if "sustain" in resources.figures else Tally(),
        aggregator.lagging.get("sustain", Tally()),
    )
    return report


def resource_summary(
    resources: ResourceLog,
    target_rss_baseline: int | None,
    target_rss_peak: int | None,
    plan: RunPlan,
) -> dict[str, Any]:
    """Peaks and means of the generator, the target and the host over sustain."""
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
            target["rss_per_session"] = round(
                (target_rss_peak - target_rss_baseline) / plan.sessions, 1
            )
    host = {
        "cpu_peak": figures.host_cpu_peak,
        "cpus": figures.host_cpus,
        "mem_used_peak": figures.host_mem_used_peak,
    }
    return {"generator": generator, "target": target, "host": host}


def verdicts(
    report: dict[str, Any], busy_samples: Tally, lagging_intervals: Tally
) -> dict[str, Any]:
    """The run's verdicts, judged on the tallies of the sustain samples and intervals."""
    reasons = []
    sustain_phase = report["phases"].get("sustain")
    open_model = report["model"]["type"] == "open"
    total = sustain_phase["total"] if sustain_phase else {}
    arrivals = total.get("ok", 0) + total.get("errors", 0)
    late_fraction = total.get("late", 0) / arrivals if open_model and arrivals else 0.0
    behind_count = total.get("counters", {}).get(BEHIND, 0)
    behind = behind_count / arrivals if open_model and arrivals else 0.0
    if behind >= BEHIND_BOUND_SHARE and behind_count >= BEHIND_BOUND_MIN:
        reasons.append(
            f"the open model's driver took up {behind:.1%} of the arrivals more than "
            f"{BEHIND_NS / 1e6:.0f} ms after their intended time (add --processes or cores)"
        )
    busy = busy_samples.total > 0 and busy_samples.share >= CPU_BOUND_SHARE
    if busy and (not open_model or late_fraction > LATE_BOUND_SHARE):
        reasons.append(
            f"a worker process used >= {CPU_BOUND_PERCENT:.0f}% of a core in "
            f"{busy_samples.share:.0%} of the sustain samples (add --processes or cores)"
        )
    if lagging_intervals.total and lagging_intervals.share >= LAG_BOUND_SHARE:
        reasons.append(
            f"the workers' event loops lagged >= {LAG_BOUND_MS:.0f} ms in "
            f"{lagging_intervals.share:.0%} of the sustain intervals"
        )
    if late_fraction > LATE_BOUND_SHARE and reasons:
        reasons.append(f"the open model fell behind: {late_fraction:.1%} of arrivals were late")
    thresholds_ok = all(t["ok"] for t in report["thresholds"])
    return {
        "generator_bound": bool(reasons),
        "reason": "; ".join(reasons) or None,
        "late_fraction": round(late_fraction, 6),
        "thresholds_passed": thresholds_ok,
        "complete": not report["partial"],
    }


def exit_code_for(report: dict[str, Any]) -> int:
    if report["partial"] or "sustain" not in report["phases"]:
        return EXIT_INCOMPLETE
    if not report["verdicts"]["thresholds_passed"]:
        return EXIT_THRESHOLDS
    return EXIT_OK
