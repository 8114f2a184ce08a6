"""Reports built from worker frames of known content, through the engine's own aggregator."""

from __future__ import annotations

import dataclasses
from typing import Any

from protobench.engine.aggregate import Aggregator
from protobench.engine.metrics import OpRecorder
from protobench.engine.plan import Overrides, RunPlan, resolve
from protobench.engine.report import build_report
from protobench.engine.report_model import Report, WorkerEntry
from protobench.engine.resource_log import ResourceLog
from protobench.profiles import loader
from protobench.targets.base import Announcement
from protobench.vocab.errors import ErrorClass, OpError


def plan_of(groups: dict[str, int], thresholds: tuple[str, ...] = ()) -> RunPlan:
    plan = resolve(loader.load("http-get"), Overrides(duration=2.0, warmup=0.0))
    base = plan.groups[0]
    return dataclasses.replace(
        plan,
        groups=tuple(dataclasses.replace(base, name=n, count=c) for n, c in groups.items()),
        thresholds=thresholds,
    )


def frame(
    phase: str, index: int, t0: float, t1: float, ops: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    wire = {}
    for name, spec in ops.items():
        recorder = OpRecorder(name)
        for _ in range(spec.get("ok", 0)):
            recorder.latencies.append(spec.get("latency_ns", 1_000_000))
            if "delay_ns" in spec:
                recorder.delays.append(spec["delay_ns"])
        for _ in range(spec.get("errors", 0)):
            if spec.get("error_class", "protocol") == "protocol":
                recorder.error(OpError(ErrorClass.PROTOCOL, "403 Forbidden", "403"))
            else:
                recorder.error(OpError(ErrorClass(spec["error_class"]), "no reply in time"))
        for counter, value in spec.get("counters", {}).items():
            recorder.count(counter, value)
        wire[name] = recorder.flush().to_wire()
    return {"phase": phase, "index": index, "t0": t0, "t1": t1, "worker": 0, "ops": wire}


def report_of(
    plan: RunPlan,
    frames: list[dict[str, Any]],
    kinds: dict[str, str] | None = None,
    opened: int = 1,
    failed: int = 0,
    stop_reason: str = "completed",
    passive: frozenset[str] = frozenset(),
    findings: list[str] | None = None,
) -> Report:
    offsets = {"warmup": 0.0, "sustain": plan.warmup, "drain": plan.warmup + plan.duration}
    aggregator = Aggregator(
        [g.name for g in plan.groups],
        False,
        offsets,
        sessions={g.name: g.count for g in plan.groups},
        kinds=kinds,
    )
    aggregator.live = {0}
    for frame in frames:
        aggregator.add(frame)
    aggregator.finish()
    workers = [WorkerEntry(worker=0, sessions_opened=opened, sessions_failed=failed)]
    return build_report(
        plan=plan,
        aggregator=aggregator,
        announcement=Announcement("http://127.0.0.1:1/", "external", 0),
        resources=ResourceLog(),
        notices=[],
        workers=workers,
        stop_reason=stop_reason,
        started=0.0,
        target_rss_baseline=None,
        target_rss_peak=None,
        passive=passive,
        findings=findings,
    )
