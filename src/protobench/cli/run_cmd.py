"""``protobench run PROFILE``: resolve the plan, run it, print the report.

Headless when stdout is not a terminal or with ``--no-tui``, ``--json`` or
``--ndjson``: a one-line progress on stderr, then the summary table (or the
JSON report) on stdout. ``--ndjson`` streams one JSON object per event (type
``interval``, ``resources``, ``phase``, ``notice``), then the report with type
``report`` (:mod:`cli.ndjson`: a consumer that stops reading never stalls the
run). Ctrl-C (SIGINT), SIGTERM or SIGHUP (the terminal closed) stops the run
cleanly: the partial report is printed and the snapshot saved. A snapshot that
could not be saved in the store is one line on stderr; the report is printed
all the same.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from protobench.cli import report_cmd
from protobench.cli.baseline_opt import BaselineOption, load_baseline
from protobench.cli.boundary import EXIT_INCOMPLETE
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
)
from protobench.cli.complete import ProfileArgument
from protobench.cli.ndjson import NdjsonStream
from protobench.cli.render import Progress, summary_table
from protobench.engine.events import RunFinished
from protobench.engine.report_model import Report, report_to_json, to_plain
from protobench.protocols.registry import PluginError
from protobench.snapshots.store import SnapshotStore, read

if TYPE_CHECKING:  # the engine, pydantic and numpy load in the command, not for --help
    from protobench.engine.controller import Controller, PoolFactory
    from protobench.engine.plan import RunPlan
    from protobench.tui.baseline import Baseline

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that stop a run cleanly (SIGHUP: the terminal was closed)."""


async def execute(controller: Controller) -> Report:
    """Run the controller, turning SIGINT, SIGTERM and SIGHUP into a clean stop."""
    import anyio  # noqa: PLC0415

    async with anyio.create_task_group() as group:

        async def watch_signals() -> None:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for _ in signals:
                    if controller.stop_requested:
                        controller.abort()  # a second Ctrl-C: kill what is left at once
                    else:
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
    pool_factory: PoolFactory | None = None,
) -> Report:
    """Run a plan to the end on uvloop and return its report.

    ``labels`` (e.g. a sweep's group and level) are stored in the report and
    the snapshot.
    """
    import anyio  # noqa: PLC0415

    from protobench.engine.controller import Controller, describe_failure  # noqa: PLC0415

    controller = Controller(
        plan,
        store,
        target_pid=target_pid,
        subscribers=subscribers,
        labels=labels,
        pool_factory=pool_factory,
    )
    try:
        return anyio.run(
            execute, controller, backend="asyncio", backend_options={"use_uvloop": True}
        )
    except Exception as exc:  # the run failed outright: one line, exit 3, no traceback
        with contextlib.suppress(OSError):
            sys.stderr.write(f"protobench: error: {describe_failure(exc)}\n")
        raise typer.Exit(EXIT_INCOMPLETE) from None


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        profile: ProfileArgument,
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
            int | None,
            typer.Option("--target-pid", min=1, help="PID of the target, for its resources."),
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
        report_file: Annotated[
            Path | None,
            typer.Option("--report", help="Also write the run as one HTML page (report extra)."),
        ] = None,
        ray: Annotated[
            str | None,
            typer.Option(
                "--ray", help="Run the workers on a Ray cluster: auto, HOST:PORT, local:N."
            ),
        ] = None,
        baseline: BaselineOption = None,
    ) -> None:
        """Run a profile: warmup, sustain, report, thresholds, snapshot.

        \b
        Examples:
          protobench run http-get                        embedded target, live monitor
          protobench run mqtt-qos1 -t mqtt://127.0.0.1:1883/ -d 30s --no-tui
          protobench run ./mine.toml -r 2000/s --threshold 'p99<5ms' --json

        \b
        Exit codes: 0 ok, 1 a threshold or check failed, 2 bad input (nothing
        ran), 3 the run could not complete, 5 the snapshot was not saved in the store.
        """
        from protobench.engine.plan import resolve  # noqa: PLC0415
        from protobench.profiles import loader  # noqa: PLC0415

        if report_file is not None:
            report_cmd.require_extra()  # before the run, not after it
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
        compared = load_baseline(store, baseline)
        interactive = sys.stdout.isatty() and not (as_json or ndjson or no_tui or ray)
        if interactive:
            code = _run_interactive(plan, store, target_pid, compared)
            if report_file is not None:
                report_cmd.write_run_report(store.load("latest"), report_file)
            raise typer.Exit(code)
        subscribers: list[Any] = []
        progress = None
        if not quiet:
            progress = Progress(plan.duration, plan.warmup)
            subscribers.append(progress)
        stream = NdjsonStream() if ndjson else None
        if stream is not None:
            subscribers.append(stream)
        finished: list[RunFinished] = []
        subscribers.append(lambda e: finished.append(e) if isinstance(e, RunFinished) else None)
        from protobench.engine.distributed.cluster import (  # noqa: PLC0415 - Ray only with --ray
            RayBackendError,
            open_backend,
        )
        from protobench.engine.distributed.pool import RayPoolFactory  # noqa: PLC0415

        try:
            backend = open_backend(ray, plan.target is None) if ray else None
        except RayBackendError as exc:
            fail(str(exc))
        try:
            factory = RayPoolFactory(backend) if backend else None
            report = run_plan(plan, store, subscribers, target_pid, pool_factory=factory)
        finally:
            if backend is not None:
                backend.close()
        if progress is not None:
            progress.close()
        code = finished[-1].exit_code if finished else EXIT_INCOMPLETE
        say_snapshot_error(report)
        if stream is not None:
            stream.close(report)
        else:
            _print_report(report, as_json)
        if report_file is not None and report.snapshot:
            report_cmd.write_run_report(read(Path(report.snapshot)), report_file)
        raise typer.Exit(code)


def say_snapshot_error(report: Report) -> None:
    """One line on stderr each when the run could not start (the target's own words)
    and when the snapshot is not in the store (where it went, or nowhere)."""
    lines = []
    if report.stop_reason == "error" and report.sustain is None:
        start = [n.message for n in report.notices if n.kind == "target"]
        if start:
            lines.append("error: " + " ".join(start[0].split()))
    if report.snapshot_error:
        lines.append(report.snapshot_error)
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has no stderr
        for line in lines:
            sys.stderr.write(f"protobench: {line}\n")
        sys.stderr.flush()


def _print_report(report: Report, as_json: bool) -> None:
    """The report on stdout, unless stdout is gone (a closed terminal, a closed pipe)."""
    with contextlib.suppress(OSError):
        if as_json:
            sys.stdout.write(report_to_json(report, indent=True).decode() + "\n")
            sys.stdout.flush()
        else:
            typer.echo(summary_table(to_plain(report)))


def _run_interactive(
    plan: RunPlan, store: SnapshotStore, target_pid: int | None, baseline: Baseline | None = None
) -> int:
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
        say_snapshot_error(report)
        _print_report(report, as_json=False)
        return finished[-1].exit_code if finished else EXIT_INCOMPLETE
    return run_live(plan, store, target_pid, baseline)
