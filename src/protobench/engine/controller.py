"""The run controller: target, worker pool, phases, aggregation, thresholds, events.

:meth:`Controller.run` does a whole run and returns the final report:

1. starts the embedded target when the plan has none (``targets.launcher``),
   measuring the target's RSS before any session opens;
2. starts the worker processes (a pool of :mod:`engine.pool_contract`: local
   ``engine.pool`` or a factory's, such as the Ray pool) and sends each its slice;
3. when every worker has opened its sessions, sends one common start time (a
   worker still silent at the deadline is killed; the others start without it);
4. merges the workers' interval reports (``engine.aggregate``), samples
   resources once per interval, and publishes :mod:`engine.events` to its
   sinks (:mod:`engine.sinks`: each reads its own bounded buffer in its own
   task, so a slow one never stalls the run);
5. ends when the workers say ``BYE``, or stops them on :meth:`stop` (Ctrl-C,
   the TUI's ``q``), marking the run partial, or when every worker said
   ``DONE`` (its share of the plan's request count has ended: the sustain ends,
   the run is complete); a worker that dies is reported
   with its exit code and log tail, the run goes on with the others and is
   marked partial (``stop_reason = "worker-failed"``): its figures lack a share,
   what it reported before stays; a run none of whose sessions could open stops
   after a few seconds (``stop_reason = "no-session"``, :mod:`engine.no_session`);
6. builds the report, evaluates thresholds and verdicts (with the plugin's
   diagnosis of its counters), hands the run to the caller's archive (the
   snapshot, :mod:`engine.archive`), publishes ``RunFinished`` and waits until
   every sink has read it.

It never raises for a failing target or worker: those are results. Only a run
that could not start (no target, no worker) ends with ``stop_reason = "error"``
and exit code 3. Nor does an archive that cannot write lose the run: the
report says where the run went in ``snapshot`` and what failed in
``snapshot_error`` (exit code 5 when the run passed). The run's id and its
log directory are the caller's (the controller knows no store).
Every notice's text passes through :func:`redaction.redact_text`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from protobench.engine.aggregate import Aggregator
from protobench.engine.archive import Archive, Kept, RunRecord
from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.frames import FrameKind
from protobench.engine.no_session import NoSessionWatch
from protobench.engine.plan import RunPlan, worker_slices
from protobench.engine.pool import WorkerPool
from protobench.engine.pool_contract import Pool, PoolFactory, WorkerHandle
from protobench.engine.profiler import TargetProfiler, start_profiler
from protobench.engine.report import (
    RunJudge,
    build_report,
    clock_report,
    exit_code_for,
    protocols_report,
)
from protobench.engine.report_model import (
    NO_SESSION,
    NO_SESSION_NOTICE,
    ClockReport,
    NoticeEntry,
    NoticeValue,
    Report,
)
from protobench.engine.resource_log import ResourceLog
from protobench.engine.resources import Sampler, find_listener, target_rss
from protobench.engine.sinks import Fanout, Sink
from protobench.protocols import registry
from protobench.redaction import redact_text, redact_url, redact_value
from protobench.targets.base import Announcement
from protobench.targets.launcher import StartingTarget, TargetError, embedded_target
from protobench.vocab.exceptions import leaves
from protobench.vocab.units import format_duration

START_DELAY = 0.1
"""Seconds between the GO frame and the common start (every worker reads it by then)."""
HELLO_GRACE = 30.0
BYE_GRACE = 10.0
PROFILER_GRACE = 20.0
"""Seconds the target's profiler has, once the workers are done, to stop and read its last chunk."""


def describe_failure(exc: BaseException) -> str:
    """One line for a run that failed outright: the first leaf of an exception group, redacted."""
    first = leaves(exc)[0]
    message = " ".join(str(first).split()) or type(first).__name__
    return redact_text(f"the run failed: {message}")


class Controller:
    """One run of a plan.

    ``log_dir`` receives the worker and target logs; ``sinks`` read the
    events (more with :meth:`attach` before :meth:`run`); ``archive`` keeps
    the finished run (None: the run is not kept).

    Commands (:meth:`pause`, :meth:`resume`, :meth:`set_rate_factor`,
    :meth:`stop`) may be called from any code running on the controller's event
    loop, a plain callback included; from another thread, hand them to that
    loop (``loop.call_soon_threadsafe``).
    """

    def __init__(
        self,
        plan: RunPlan,
        log_dir: Path,
        *,
        sinks: list[Sink] | None = None,
        archive: Archive | None = None,
        target_pid: int | None = None,
        labels: dict[str, Any] | None = None,
        pool_factory: PoolFactory | None = None,
    ) -> None:
        self.plan = plan
        self.pool_factory: PoolFactory = pool_factory or WorkerPool
        self.labels = dict(labels or {})
        self.archive = archive
        self.target_pid = target_pid
        self.fanout = Fanout(self._sink_failed)
        for sink in sinks or []:
            self.fanout.attach(sink)
        self.start_at: float | None = None
        self.stop_requested = False
        self.stop_reason = "completed"
        self.counted = False
        """The request count ended the sustain (every worker said ``DONE``): completed."""
        self._done: set[int] = set()
        self.notices: list[NoticeEntry] = []
        self.clock: ClockReport | None = None
        self.protocols: dict[str, dict[str, int]] | None = None
        """Where the exchanges' times come from (known once the workers opened their sessions)."""
        self.log_dir = log_dir
        self.resources = ResourceLog()
        self.pool: Pool | None = None
        self.profiler: TargetProfiler | None = None
        self.rate_factor = 1.0
        self.no_session = NoSessionWatch(0, 0)
        self._stop_event = anyio.Event()
        self.plugin = registry.load(plan.protocol)
        offsets = {"warmup": 0.0, "sustain": plan.warmup, "drain": plan.warmup + plan.duration}
        self.aggregator = Aggregator(
            [g.name for g in plan.groups],
            plan.model == "open",
            offsets,
            sessions={g.name: g.count for g in plan.groups},
            kinds={g.name: self.plugin.latency_kind(g.op, g.params) for g in plan.groups},
            judge=RunJudge.of(plan, self.resources, self._passive()),
        )

    def attach(self, sink: Sink) -> None:
        """Add a sink (before :meth:`run`): it reads every event from its own buffer."""
        self.fanout.attach(sink)

    def emit(self, event: Event) -> None:
        """Publish ``event`` to every sink; never waits for one."""
        self.fanout.publish(event)

    def _sink_failed(self, name: str, exc: Exception) -> None:
        self.notice("sink", f"the {name} output failed and was left out: {exc!r}", sink=name)

    def elapsed(self) -> float:
        if self.start_at is None:
            return 0.0
        return max(0.0, time.monotonic() - self.start_at)

    def notice(self, kind: str, message: str, **details: NoticeValue) -> None:
        message = redact_text(message)
        details = {k: redact_text(v) if isinstance(v, str) else v for k, v in details.items()}
        event = Notice(kind, message, round(self.elapsed(), 3), details)
        self.notices.append(
            NoticeEntry(kind=kind, message=message, elapsed=event.elapsed, details=details)
        )
        self.emit(event)

    def pause(self) -> None:
        if self.pool is not None:
            self.pool.broadcast(FrameKind.PAUSE, {})
            self.notice("pause", "load paused")

    def resume(self) -> None:
        if self.pool is not None:
            self.pool.broadcast(FrameKind.RESUME, {})
            self.notice("resume", "load resumed")

    def set_rate_factor(self, factor: float) -> None:
        """Scale the open-model rate live (recorded as a rate-change notice)."""
        if self.pool is None or self.plan.rate is None:
            return
        self.rate_factor = max(0.01, factor)
        self.pool.broadcast(FrameKind.RATE, {"factor": self.rate_factor})
        change = (self.rate_factor - 1) * 100
        self.notice(
            "rate",
            f"rate set to {self.plan.rate * self.rate_factor:.0f}/s "
            f"(base {self.plan.rate:.0f}/s {change:+.0f}%)",
            factor=self.rate_factor,
        )

    def stop(self, reason: str = "interrupted") -> None:
        """End the run early; the report and snapshot are marked partial."""
        if self.stop_requested:
            return
        self.stop_requested = True
        self.stop_reason = reason
        if self.pool is not None:
            self.pool.broadcast(FrameKind.STOP, {})
        self._stop_event.set()
        if self.profiler is not None:
            self.profiler.quit()
        if self.start_at is not None:
            self.emit(PhaseChanged("drain", round(self.elapsed(), 3)))

    def abort(self) -> None:
        """Stop at once (a second Ctrl-C): kill the workers still running, so a stopped
        or hung worker cannot hold the exit; the report and snapshot are still made."""
        self.stop()
        self.fanout.abandon()  # the run is over and a sink is stuck: stop waiting for it
        if self.pool is not None:
            self.pool.abort()

    def _passive(self) -> frozenset[str]:
        """The groups whose op exchanges nothing by design."""
        return frozenset(g.name for g in self.plan.groups if g.op in self.plugin.passive_ops)

    async def run(self) -> Report:
        """Do the whole run; return the final report (also published as RunFinished,
        the last event every sink reads: :meth:`run` returns once they all have)."""
        async with self.fanout.running():
            report = await self._run()
            self.emit(RunFinished(report, exit_code_for(report)))
        return report

    async def _run(self) -> Report:
        announcement: Announcement | None = None
        baseline_rss: int | None = None
        peak: int | None = None
        started_wall = time.time()
        try:
            async with (  # the workers first: their imports are the longest wait of the start
                self.pool_factory(worker_slices(self.plan), self.log_dir) as pool,
                self._target() as starting,
            ):
                self.pool = pool
                announcement = await starting.ready()
                target_pid = self.target_pid or (
                    announcement.pid
                    if self.plan.target is None
                    else find_listener(announcement.url)
                )
                baseline_rss = target_rss(target_pid)
                await pool.start(announcement.url)
                await self._run_workers(pool, announcement, target_pid)
                peak = self.resources.whole.target_rss_peak
        except* TargetError as failed:
            self.stop_reason = "error"
            for exc in leaves(failed):
                self.notice("target", str(exc))
        report = build_report(
            plan=self.plan,
            aggregator=self.aggregator,
            announcement=announcement,
            resources=self.resources,
            notices=self.notices,
            workers=self.pool.summary() if self.pool else [],
            stop_reason=self.stop_reason,
            started=started_wall,
            target_rss_baseline=baseline_rss,
            target_rss_peak=peak,
            findings=self._diagnose(),
            passive=self._passive(),
            per_connection=self.plugin.memory_per_connection({g.op for g in self.plan.groups}),
            profile=self.profiler.result() if self.profiler else None,
            labels=self.labels,
            nodes=self.pool.nodes() if self.pool else None,
            clock=self.clock,
            protocols=self.protocols,
        )
        if self.archive is not None:
            kept = await anyio.to_thread.run_sync(self.archive.keep, self._record(report))
            report = say_where(report, kept)
        return report

    def _record(self, report: Report) -> RunRecord:
        return RunRecord(
            plan=self.plan,
            report=report,
            series=self.aggregator.series,
            histograms=self.aggregator.phase_histograms(),
            resources=self.resources.series,
            target_profile=self.profiler.result() if self.profiler else None,
        )

    def _diagnose(self) -> list[str]:
        """The plugin's findings from each op's counters (groups of one op summed)."""
        by_op: dict[str, dict[str, int]] = {}
        totals = self.aggregator.counter_totals()
        for group in self.plan.groups:
            counters = by_op.setdefault(group.op, {})
            for name, value in totals.get(group.name, {}).items():
                counters[name] = counters.get(name, 0) + value
        try:
            return [redact_text(str(line)) for line in self.plugin.diagnose(by_op)]
        except Exception as exc:  # a plugin's bug must not lose the run
            return [f"the {self.plan.protocol} plugin's diagnosis failed: {exc!r}"]

    @contextlib.asynccontextmanager
    async def _target(self) -> AsyncIterator[StartingTarget]:
        plan = self.plan
        if plan.target is not None:
            yield StartingTarget.external(Announcement(plan.target, "external", 0))
            return
        assert plan.embedded is not None
        log = self.log_dir / "target.log"
        async with embedded_target(plan.embedded, plan.serve, log) as starting:
            yield starting

    async def _run_workers(
        self, pool: Pool, announcement: Announcement, target_pid: int | None
    ) -> None:
        plan = self.plan
        grace = HELLO_GRACE + plan.timeout + plan.sessions / 200
        hellos = await pool.wait_hello(self._stop_event, grace)
        if self.stop_requested:  # interrupted while the sessions opened (the workers may be gone)
            return
        if not pool.live:
            self.stop_reason = "error"
            self._report_failures(pool)
            return
        self.aggregator.live = set(pool.live)
        opened = sum(h.get("opened", 0) for h in hellos)
        failed = sum(h.get("failed", 0) for h in hellos)
        self.no_session = NoSessionWatch(opened, failed)
        self.clock, clock_note = clock_report(plan.clock, hellos, plan.protocol)
        self.protocols = protocols_report(hellos)
        self.start_at = time.monotonic() + START_DELAY
        pool.broadcast(FrameKind.GO, {"start_at": self.start_at})
        self.emit(
            RunStarted(
                plan=redact_value(plan.redacted()),
                target=redact_url(announcement.url),
                target_kind=announcement.kind,
                workers=len(pool.handles),
                sessions_opened=opened,
                sessions_failed=failed,
                log_dir=str(self.log_dir),
            )
        )
        if clock_note is not None:
            self.notice("clock", clock_note)
        sampler = Sampler(pool.pids(), target_pid, pool.worker_samples)
        deadline = self.start_at + plan.warmup + plan.duration + plan.drain + BYE_GRACE
        self.profiler = start_profiler(
            plan.profiling,
            target_pid,
            self.log_dir,
            self.emit,
            lambda line: self.notice("profile", line),
            self.elapsed,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(self._sample_resources, sampler)
            group.start_soon(self._phase_clock)
            if self.profiler is not None:
                sustain = self.start_at + plan.warmup
                group.start_soon(self.profiler.run, sustain, sustain + plan.duration)
            await self._consume(pool, deadline)
            if self.profiler is not None:  # its last chunk is read before the report
                self.profiler.quit()
                with anyio.move_on_after(PROFILER_GRACE):
                    await self.profiler.done.wait()
            group.cancel_scope.cancel()
        self._report_failures(pool)

    async def _consume(self, pool: Pool, deadline: float) -> None:
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())) as scope:
            async for handle, kind, payload in pool.frames():
                if kind is FrameKind.STATS:
                    for update in self.aggregator.add(payload):
                        self.emit(update)
                        self._watch_sessions(update)
                elif kind is FrameKind.DONE and handle is not None:
                    self._done.add(handle.index)
                    self._end_if_counted()
                elif kind is FrameKind.GONE and handle is not None:
                    self._worker_gone(handle)
                    self._end_if_counted()
                elif kind is FrameKind.NOTICE:
                    self.notice(payload["kind"], payload["message"])
        if scope.cancelled_caught:
            self.notice("workers", "workers did not finish in time; stopped")
            self.stop_reason = "error" if not self.stop_requested else self.stop_reason
        elif self.plan.requests is not None and not (self.counted or self.stop_requested):
            self.notice(
                "requests",
                f"the duration ({format_duration(self.plan.duration)}) ended the sustain "
                f"before its {self.plan.requests:,} requests",
            )
        await pool.shutdown()
        for update in self.aggregator.finish():
            self.emit(update)

    def _watch_sessions(self, update: IntervalUpdate) -> None:
        """Stop a run none of whose sessions could open for a few seconds (no_session)."""
        reason = self.no_session.add(update)
        if reason is not None and not self.stop_requested:
            self.notice(NO_SESSION_NOTICE, reason)
            self.stop(NO_SESSION)

    def _end_if_counted(self) -> None:
        """End the sustain once every live worker's share of the request count has ended."""
        if self.stop_requested or self.counted or not self._done:
            return
        if self.aggregator.live <= self._done and self.pool is not None:
            self.counted = True
            self.pool.broadcast(FrameKind.STOP, {})
            self.emit(PhaseChanged("drain", round(self.elapsed(), 3)))

    def _worker_gone(self, handle: WorkerHandle) -> None:
        for update in self.aggregator.worker_gone(handle.index):
            self.emit(update)
        if handle.error is not None:
            if self.stop_reason == "completed":
                self.stop_reason = "worker-failed"
            self.notice(
                "worker",
                f"worker {handle.index} (pid {handle.pid}) failed: {handle.error}",
                worker=handle.index,
                exit_code=handle.exit_code,
                log_tail=handle.log_tail(),
            )

    def _report_failures(self, pool: Pool) -> None:
        for handle in pool.handles:
            if handle.error is not None and not any(
                n.details.get("worker") == handle.index for n in self.notices
            ):
                self.notice(
                    "worker",
                    f"worker {handle.index} failed: {handle.error}",
                    worker=handle.index,
                    exit_code=handle.exit_code,
                    log_tail=handle.log_tail(),
                )

    async def _phase_clock(self) -> None:
        assert self.start_at is not None
        plan = self.plan
        marks = [("warmup", 0.0), ("sustain", plan.warmup), ("drain", plan.warmup + plan.duration)]
        for phase, offset in marks:
            if phase == "warmup" and plan.warmup <= 0:
                continue
            await anyio.sleep(max(0.0, self.start_at + offset - time.monotonic()))
            if self.stop_requested or self.counted:
                return
            self.emit(PhaseChanged(phase, round(self.elapsed(), 3)))

    async def _sample_resources(self, sampler: Sampler) -> None:
        watching = sampler.target is not None
        while True:
            await anyio.sleep(self.plan.interval)
            workers, target, host = sampler.sample()
            if watching and target is None:
                watching = False
                assert sampler.target is not None
                self.notice(
                    "target",
                    f"the target process (pid {sampler.target.pid}) is gone",
                    pid=sampler.target.pid,
                )
            sample = ResourceSample(round(self.elapsed(), 3), workers, target, host)
            self.resources.add(
                {
                    "elapsed": sample.elapsed,
                    "phase": self._phase_now(),
                    "workers": workers,
                    "target": target,
                    "host": host,
                }
            )
            self.emit(sample)

    def _phase_now(self) -> str:
        elapsed = self.elapsed()
        if self.stop_requested or self.counted:
            return "drain"
        if elapsed < self.plan.warmup:
            return "warmup"
        if elapsed < self.plan.warmup + self.plan.duration:
            return "sustain"
        return "drain"


def say_where(report: Report, kept: Kept) -> Report:
    """The report with ``snapshot``: where the run was kept (None: nowhere), and
    ``snapshot_error``: one line naming the place that failed and the error, when there was one."""
    return replace(
        report,
        snapshot=None if kept.path is None else str(kept.path),
        snapshot_error=kept.error,
    )
