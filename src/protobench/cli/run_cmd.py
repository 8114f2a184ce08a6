"""``protobench run PROFILE``: resolve the plan, run it, print the report.

Headless when stdout is not a terminal or with ``--no-tui``, ``--json`` or
``--ndjson``: a one-line progress on stderr, then the summary table (or the
JSON report) on stdout. ``--ndjson`` streams one JSON object per event (type
``interval``, ``resources``, ``phase``, ``notice``), then the report with type
``report``. Ctrl-C (SIGINT) or SIGTERM stops the run cleanly: the partial
report is printed and the snapshot saved.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
from typing import Annotated, Any

import anyio
import typer

from protobench.cli.common import (
    ConnectionsOption,
    DurationOption,
    IntervalOption,
    OptOption,
    ProcessesOption,
    QuietOption,
    RateOption,
    ServeOptOption,
    SnapshotsDirOption,
    TargetOption,
    WarmupOption,
    build_overrides,
    fail,
    print_json,
)
from protobench.cli.render import Progress, summary_table
from protobench.engine.controller import Controller
from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.plan import RunPlan, resolve
from protobench.engine.report import EXIT_INCOMPLETE
from protobench.profiles import loader
from protobench.protocols.registry import PluginError
from protobench.snapshots.store import SnapshotStore

NDJSON_TYPES: dict[type, str] = {
    RunStarted: "started",
    PhaseChanged: "phase",
    IntervalUpdate: "interval",
    ResourceSample: "resources",
    Notice: "notice",
}


def ndjson_writer(event: Event) -> None:
    """Write one event as a JSON line on stdout (histograms left out)."""
    kind = NDJSON_TYPES.get(type(event))
    if kind is None:
        return
    data = dataclasses.asdict(event)
    if isinstance(event, IntervalUpdate):
        for op in data["ops"].values():
            op.pop("hist", None)
            op.pop("hist_uncorrected", None)
    sys.stdout.write(json.dumps({"type": kind, **data}, default=str) + "\n")
    sys.stdout.flush()


async def execute(controller: Controller) -> dict[str, Any]:
    """Run the controller, turning SIGINT/SIGTERM into a clean stop."""
    async with anyio.create_task_group() as group:

        async def watch_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    controller.stop("interrupted")

        group.start_soon(watch_signals)
        report = await controller.run()
        group.cancel_scope.cancel()
    return report


def run_plan(
    plan: RunPlan,
    store: SnapshotStore,
    subscribers: list[Any],
    target_pid: int | None = None,
    labels: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run a plan to the end on uvloop and return its report.

    ``labels`` (e.g. a sweep's group and level) are stored in the report and
    the snapshot.
    """
    controller = Controller(
        plan, store, target_pid=target_pid, subscribers=subscribers, labels=labels
    )
    return anyio.run(execute, controller, backend="asyncio", backend_options={"use_uvloop": True})


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        profile: Annotated[str, typer.Argument(help="Built-in profile name or a profile file.")],
        target: TargetOption = None,
        duration: DurationOption = None,
        warmup: WarmupOption = None,
        connections: ConnectionsOption = None,
        rate: RateOption = None,
        ramp_to: Annotated[
            str | None, typer.Option("--ramp-to", help="Open model: ramp linearly to this rate.")
        ] = None,
        processes: ProcessesOption = None,
        interval: IntervalOption = None,
        timeout: Annotated[str | None, typer.Option(help="Per-operation timeout.")] = None,
        pacing_precision: Annotated[
            str | None,
            typer.Option(help="Open model: sends may batch this late (default 100us)."),
        ] = None,
        threshold: Annotated[
            list[str] | None,
            typer.Option("--threshold", help="Extra threshold, e.g. 'p99<5ms' (repeatable)."),
        ] = None,
        opt: OptOption = None,
        serve_opt: ServeOptOption = None,
        target_pid: Annotated[
            int | None, typer.Option("--target-pid", help="PID of the target, for its resources.")
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print the final report as JSON.")
        ] = False,
        ndjson: Annotated[
            bool,
            typer.Option("--ndjson", help="Stream one JSON line per interval, then the report."),
        ] = False,
        no_tui: Annotated[bool, typer.Option("--no-tui", help="Never open the monitor.")] = False,
        quiet: QuietOption = False,
        snapshots_dir: SnapshotsDirOption = None,
    ) -> None:
        """Run a profile: warmup, sustain, report, thresholds, snapshot."""
        overrides = build_overrides(
            target=target,
            duration=duration,
            warmup=warmup,
            interval=interval,
            connections=connections,
            rate=rate,
            processes=processes,
            opt=opt,
            serve_opt=serve_opt,
            ramp_to=ramp_to,
            timeout=timeout,
            threshold=threshold,
            pacing_precision=pacing_precision,
        )
        try:
            plan = resolve(loader.load(profile), overrides)
        except (loader.ProfileError, PluginError) as exc:
            fail(str(exc))
        if plan.duration <= 0:
            fail("--duration: expected a duration > 0")
        store = SnapshotStore(snapshots_dir)
        interactive = sys.stdout.isatty() and not (as_json or ndjson or no_tui)
        if interactive:
            code = _run_interactive(plan, store, target_pid)
            raise typer.Exit(code)
        subscribers: list[Any] = []
        progress = None
        if not quiet:
            progress = Progress(plan.duration, plan.warmup)
            subscribers.append(progress)
        if ndjson:
            subscribers.append(ndjson_writer)
        finished: list[RunFinished] = []
        subscribers.append(lambda e: finished.append(e) if isinstance(e, RunFinished) else None)
        report = run_plan(plan, store, subscribers, target_pid)
        if progress is not None:
            progress.close()
        code = finished[-1].exit_code if finished else EXIT_INCOMPLETE
        if ndjson:
            sys.stdout.write(json.dumps({"type": "report", **report}, default=str) + "\n")
        elif as_json:
            print_json(report)
        else:
            typer.echo(summary_table(report))
        raise typer.Exit(code)


def _run_interactive(plan: RunPlan, store: SnapshotStore, target_pid: int | None) -> int:
    """Open the live monitor when it is installed, else run headless with a summary."""
    try:
        from protobench.tui.live import run_live  # noqa: PLC0415 - Textual loads only here
    except ImportError:
        progress = Progress(plan.duration, plan.warmup)
        finished: list[RunFinished] = []
        report = run_plan(
            plan,
            store,
            [progress, lambda e: finished.append(e) if isinstance(e, RunFinished) else None],
            target_pid,
        )
        progress.close()
        typer.echo(summary_table(report))
        return finished[-1].exit_code if finished else EXIT_INCOMPLETE
    return run_live(plan, store, target_pid)
