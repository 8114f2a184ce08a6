"""A deterministic scripted run: the events a real run would emit, without one.

:func:`scripted_run` feeds synthetic worker reports (seeded latencies,
errors, counters) through the engine's own :class:`Aggregator` and builds the
final report with :func:`engine.report.build_report`, so every figure on
screen is what the engine would compute from the same samples. Options add a
worker that crashes, a target that dies, the open model. It drives
:class:`protobench.tui.source.FakeSource` in tests and demos, and
:func:`scripted_snapshot` turns the same run into a snapshot for replays.
"""

from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from protobench.engine.aggregate import Aggregator
from protobench.engine.events import (
    Event,
    HostSample,
    Notice,
    PhaseChanged,
    ProcessSample,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.metrics import OpRecorder
from protobench.engine.plan import GroupPlan, RunPlan
from protobench.engine.report import RunJudge, build_report, exit_code_for
from protobench.engine.report_model import NoticeEntry, Report, WorkerEntry, to_plain
from protobench.engine.resource_log import ResourceLog, ResourceRecord
from protobench.snapshots.model import SCHEMA, Snapshot, load_snapshot
from protobench.targets.base import Announcement
from protobench.vocab.errors import ErrorClass, OpError

TARGET = "http://127.0.0.1:8080/"
MiB = 2**20


@dataclass(frozen=True)
class Script:
    """What the scripted run does. Times are seconds from the start."""

    ops: tuple[str, ...] = ("get", "post")
    warmup: float = 2.0
    duration: float = 10.0
    interval: float = 1.0
    workers: int = 2
    rate: float | None = None
    per_second: int = 400
    worker_cpu: float = 35.0
    host_cpu: float = 81.0
    thresholds: tuple[str, ...] = ("p99 < 20ms", "error_rate < 1%")
    crash_at: float | None = None
    target_dies_at: float | None = None
    stop_at: float | None = None
    seed: int = 7
    sent_per_message: int = 0
    """Bytes out of the first op per message (none by default: the SVG snapshots predate them)."""
    delay_ns: int = 0
    """The generator's delay (kernel stamp to taking the reply up) recorded for each success
    (none by default: a run on the user clock)."""
    requests: int | None = None
    """The run's request count (``-n``), for its plan."""


def _plan(script: Script) -> RunPlan:
    groups = tuple(
        GroupPlan(name=op, op=op, count=8, every=None, share=8.0, params={}) for op in script.ops
    )
    return RunPlan(
        profile="scripted",
        source="scripted",
        profile_sha256="0" * 64,
        protocol="http",
        description="a scripted run",
        target=TARGET,
        embedded=None,
        warmup=script.warmup,
        duration=script.duration,
        interval=script.interval,
        processes=script.workers,
        model="open" if script.rate is not None else "closed",
        rate=script.rate,
        ramp_to=None,
        requests=script.requests,
        timeout=5.0,
        drain=1.0,
        thresholds=script.thresholds,
        options={},
        serve={},
        groups=groups,
        overrides={},
    )


class _Run:
    """The state of a scripted run while its events are generated."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.plan = _plan(script)
        self.rng = np.random.default_rng(script.seed)
        offsets = {
            "warmup": 0.0,
            "sustain": script.warmup,
            "drain": script.warmup + script.duration,
        }
        self.resources = ResourceLog()
        self.aggregator = Aggregator(
            list(script.ops),
            script.rate is not None,
            offsets,
            sessions={g.name: g.count for g in self.plan.groups},
            judge=RunJudge.of(self.plan, self.resources),
        )
        self.aggregator.live = set(range(script.workers))
        self.notices: list[NoticeEntry] = []
        self.events: list[Event] = []
        self.alive = set(range(script.workers))
        self.target_alive = True
        self.target_noticed = False

    def notice(self, kind: str, message: str, elapsed: float, **details: Any) -> None:
        self.notices.append(
            NoticeEntry(kind=kind, message=message, elapsed=elapsed, details=details)
        )
        self.events.append(Notice(kind, message, elapsed, details))

    def worker_report(self, worker: int, phase: str, index: int, t0: float, t1: float) -> None:
        script = self.script
        ops = {}
        for number, op in enumerate(script.ops):
            recorder = OpRecorder(op)
            wave = 1.0 + 0.15 * math.sin(index + 2 * number)
            n = int(script.per_second * wave * (t1 - t0) / script.workers / (number + 1))
            median_ns = 800_000 * (number + 1)
            if self.target_alive:
                values = self.rng.lognormal(math.log(median_ns), 0.5, n).astype(np.int64)
                recorder.latencies.extend(array("q", values.tolist()))
                if script.rate is not None:
                    recorder.uncorrected.extend(array("q", (values * 3 // 4).tolist()))
                if script.delay_ns:
                    recorder.delays.extend(array("q", [script.delay_ns] * n))
                if index % 3 == 2 and number == 0:
                    recorder.error(OpError(ErrorClass.TIMEOUT, "no answer within 5s"))
                if index % 4 == 1 and number == len(script.ops) - 1:
                    recorder.error(OpError(ErrorClass.PROTOCOL, "HTTP 503", code="503"))
                if number == 0:
                    recorder.count("received", n)
                    recorder.bytes_in += 512 * n
                    recorder.add_bytes_out(script.sent_per_message * n)
                    if index % 5 == 4:
                        recorder.count("reconnects")
                        recorder.count("down_us", 250_000)
            else:
                for _ in range(3):
                    recorder.error(OpError(ErrorClass.REFUSED, "connection refused"))
            ops[op] = recorder.flush().to_wire()
        report = {
            "worker": worker,
            "phase": phase,
            "index": index,
            "t0": round(t0, 6),
            "t1": round(t1, 6),
            "ops": ops,
            "lag_ms": 1.5 + worker,
            "inflight": 4,
        }
        self.events.extend(self.aggregator.add(report))

    def sample(self, elapsed: float, phase: str) -> None:
        workers: list[ProcessSample] = [
            {
                "pid": 4100 + w,
                "cpu": self.script.worker_cpu + 10 * w,
                "rss": (60 + w) * MiB,
                "threads": 3,
                "fds": 40 + 10 * w,
                "fd_limit": 1024,
            }
            for w in sorted(self.alive)
        ]
        target: ProcessSample | None = (
            {"pid": 4000, "cpu": 72.5, "rss": 48 * MiB, "threads": 9, "fds": 70}
            if self.target_alive
            else None
        )
        if not self.target_alive and not self.target_noticed:
            self.target_noticed = True  # as the controller: the notice, then the sample
            self.notice("target", "the target process (pid 4000) is gone", elapsed, pid=4000)
        host: HostSample = {
            "cpu": self.script.host_cpu,
            "cpus": 2,
            "mem_used": 3 * 1024 * MiB,
            "mem_total": 8 * 1024 * MiB,
        }
        self.resources.add(
            {"elapsed": elapsed, "phase": phase, "workers": workers, "target": target, "host": host}
        )
        self.events.append(ResourceSample(elapsed, workers, target, host))

    def crash(self, worker: int, elapsed: float) -> None:
        self.alive.discard(worker)
        self.events.extend(self.aggregator.worker_gone(worker))
        self.notice(
            "worker",
            f"worker {worker} (pid {4100 + worker}) failed: exited with code 1",
            elapsed,
            worker=worker,
            exit_code=1,
            log_tail="Traceback (most recent call last):\nRuntimeError: scripted crash",
        )


@dataclass(frozen=True)
class ScriptedRun:
    """The events of a scripted run (``RunFinished`` last) and what a snapshot keeps."""

    events: list[Event]
    plan: RunPlan
    aggregator: Aggregator
    resources: list[ResourceRecord]

    @property
    def report(self) -> Report:
        finished = self.events[-1]
        assert isinstance(finished, RunFinished)
        return finished.report


def scripted_run(script: Script | None = None) -> ScriptedRun:
    """Generate the events of a scripted run."""
    script = script or Script()
    run = _Run(script)
    plan = run.plan
    run.events.append(
        RunStarted(
            plan=plan.to_dict(),
            target=TARGET,
            target_kind="scripted target",
            workers=script.workers,
            sessions_opened=plan.sessions,
            sessions_failed=0,
            log_dir="",
        )
    )
    end = script.warmup + script.duration
    if script.stop_at is not None:
        end = min(end, script.stop_at)
    elapsed = 0.0
    for phase, start, length in (
        ("warmup", 0.0, script.warmup),
        ("sustain", script.warmup, script.duration),
    ):
        if length <= 0 or start >= end:
            continue
        run.events.append(PhaseChanged(phase, start))
        steps = math.ceil(min(length, end - start) / script.interval - 1e-9)
        for index in range(steps):
            t0 = index * script.interval
            t1 = min(length, end - start, t0 + script.interval)
            elapsed = start + t1
            if script.target_dies_at is not None and elapsed > script.target_dies_at:
                run.target_alive = False
            for worker in sorted(run.alive):
                run.worker_report(worker, phase, index, t0, t1)
            run.sample(round(elapsed, 3), phase)
            if script.crash_at is not None and 1 in run.alive and elapsed >= script.crash_at:
                run.crash(1, round(elapsed, 3))
    stop_reason = "completed"
    if script.stop_at is not None and script.stop_at < script.warmup + script.duration:
        stop_reason = "stopped"
    run.events.extend(run.aggregator.finish())
    report = build_report(
        plan=plan,
        aggregator=run.aggregator,
        announcement=Announcement(TARGET, "scripted target", 4000),
        resources=run.resources,
        notices=run.notices,
        workers=[
            WorkerEntry(
                worker=w,
                pid=4100 + w,
                exit_code=0 if w in run.alive else 1,
                completed=w in run.alive,
                error=None if w in run.alive else "exited with code 1",
                sessions_opened=plan.sessions // script.workers,
                sessions_failed=0,
                log="",
            )
            for w in range(script.workers)
        ],
        stop_reason=stop_reason,
        started=1_700_000_000.0,
        target_rss_baseline=40 * MiB,
        target_rss_peak=48 * MiB,
    )
    report = replace(report, snapshot=".protobench/snapshots/scripted.json.gz")
    run.events.append(RunFinished(report, exit_code_for(report)))
    return ScriptedRun(run.events, plan, run.aggregator, run.resources.series)


def scripted_snapshot(script: Script | None = None) -> Snapshot:
    """The scripted run as a snapshot, read back as the store reads one."""
    run = scripted_run(script)
    report = run.report
    data = {
        "schema": SCHEMA,
        "id": "20231114-221320-scripted-0000",
        "created_at": "2023-11-14T22:13:20+00:00",
        "partial": report.partial,
        "labels": {},
        "provenance": {"tool_version": report.tool.version, "profile": run.plan.profile},
        "plan": run.plan.to_dict(),
        "report": to_plain(report),
        "series": to_plain(run.aggregator.series),
        "histograms": run.aggregator.phase_histograms(),
        "resources": run.resources,
    }
    return load_snapshot(json.loads(json.dumps(to_plain(data))))
