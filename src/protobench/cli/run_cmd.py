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
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from protobench.cli import report_cmd
from protobench.cli.baseline_opt import BaselineOption, load_baseline
from protobench.cli.common import QuietOption, SnapshotsDirOption, fail
from protobench.cli.complete import ProfileArgument
from protobench.cli.profile_arg import SaveProfileOption, load_profile, save_run
from protobench.cli.render import Progress, summary_table
from protobench.cli.run_flags import RunFlags, takes_run_flags
from protobench.engine.report_model import Report, report_to_json
from protobench.protocols.registry import PluginError
from protobench.snapshots.store import SnapshotStore, read
from protobench.termtext import echo
from protobench.vocab.exceptions import ExitCode

if TYPE_CHECKING:  # the engine, pydantic and numpy load in the command, not for --help
    from protobench.engine.controller import Controller
    from protobench.engine.plan import RunPlan
    from protobench.engine.pool_contract import PoolFactory
    from protobench.engine.sinks import Sink
    from protobench.tui.baseline import Baseline

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that stop a run cleanly (SIGHUP: the terminal was closed)."""


async def execute(controller: Controller) -> Report:
    """Run the controller, turning SIGINT, SIGTERM and SIGHUP into a clean stop."""
    import anyio  # noqa: PLC0415

    async with anyio.create_task_group() as group:
        group.start_soon(_watch_signals, controller)
        report = await controller.run()
        group.cancel_scope.cancel()
    return report


async def _watch_signals(controller: Controller) -> None:
    import anyio  # noqa: PLC0415

    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for _ in signals:
            if controller.stop_requested:
                controller.abort()  # a second Ctrl-C: kill what is left at once
            else:
                controller.stop("interrupted")


def run_plan(
    plan: RunPlan,
    store: SnapshotStore,
    sinks: list[Sink],
    target_pid: int | None = None,
    labels: dict[str, Any] | None = None,
    pool_factory: PoolFactory | None = None,
) -> Report:
    """Run a plan to the end on uvloop, kept in ``store``; return its report.

    ``sinks`` read the run's events; ``labels`` (e.g. a sweep's group and
    level) are stored in the report and the snapshot.
    """
    import anyio  # noqa: PLC0415

    from protobench.engine.controller import describe_failure  # noqa: PLC0415
    from protobench.snapshots.archive import stored_controller  # noqa: PLC0415

    controller = stored_controller(
        plan,
        store,
        sinks=sinks,
        target_pid=target_pid,
        labels=labels,
        pool_factory=pool_factory,
    )
    try:
        return anyio.run(
            execute, controller, backend="asyncio", backend_options={"use_uvloop": True}
        )
    except Exception as exc:  # the run failed outright: one line, exit 3, no traceback
        with contextlib.suppress(OSError):
            echo(f"protobench: error: {describe_failure(exc)}", err=True)
        raise typer.Exit(ExitCode.INCOMPLETE) from None


@takes_run_flags
def run_command(
    profile: ProfileArgument,
    flags: RunFlags,
    target_pid: Annotated[
        int | None,
        typer.Option(
            "--target-pid", min=1, metavar="PID", help="PID of the target, for its resources."
        ),
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
        typer.Option(
            "--report", metavar="FILE", help="Also write the run as one HTML page (see report)."
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="SPEC",
            help="Run the workers on a Ray cluster: auto, HOST:PORT, local:N.",
        ),
    ] = None,
    baseline: BaselineOption = None,
    save_profile: SaveProfileOption = None,
) -> None:
    """Run a profile: warmup, sustain, report, thresholds, snapshot.

    \b
    Examples:
      protobench run http-get                        embedded target, live monitor
      protobench run mqtt-qos1 -t mqtt://127.0.0.1:1883/ -d 30s --no-tui
      protobench run ./mine.toml -r 2000/s --threshold 'p99<5ms' --json
      protobench run bacnet-ip --profile-target      where the server spends sustain
      protobench run http://127.0.0.1:8080/api -n 10000 -c 20
      protobench run https://127.0.0.1:8443/orders -m POST -T application/json \\
          --data @order.json -H 'Authorization: Bearer ...' --save-profile orders.toml

    \b
    Exit codes: 0 ok, 1 a threshold or check failed, 2 bad input (nothing
    ran), 3 the run could not complete, 5 the snapshot was not saved in the store.
    """
    plan = _resolve(profile, flags, save_profile)
    store = SnapshotStore(snapshots_dir)
    compared = load_baseline(store, baseline)
    with _pool_factory(ray, plan, quiet=quiet) as factory:
        if sys.stdout.isatty() and not (as_json or ndjson or no_tui):
            code = _run_interactive(plan, store, target_pid, compared, factory, quiet=quiet)
            if report_file is not None:
                report_cmd.write_run_report(store.load("latest"), report_file)
            raise typer.Exit(code)
        report = run_headless(plan, store, target_pid, factory, quiet=quiet, ndjson=ndjson)
    say_snapshot_error(report)
    if not ndjson:  # the NDJSON stream ended with the report
        _print_report(report, as_json)
    if report_file is not None and report.snapshot:
        report_cmd.write_run_report(read(Path(report.snapshot)), report_file)
    raise typer.Exit(_exit_code(report))


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)


def _resolve(profile: str, flags: RunFlags, save: Path | None = None) -> RunPlan:
    """The plan of ``profile`` (a URL too) with the command line's flags; exit 2 when it is
    bad; ``save``: also keep a URL run as this profile file (once its plan is known good)."""
    from protobench.engine.plan import resolve  # noqa: PLC0415
    from protobench.profiles import loader  # noqa: PLC0415

    first = load_profile(profile, flags, save)
    try:
        plan = resolve(first.loaded, first.flags.overrides())
    except (loader.ProfileError, PluginError) as exc:
        fail(str(exc))
    if save is not None and first.url_run is not None:
        save_run(first.url_run, first.flags, save)
    if plan.duration <= 0:
        fail("--duration: expected a duration > 0")
    return plan


@contextlib.contextmanager
def _pool_factory(ray: str | None, plan: RunPlan, *, quiet: bool) -> Iterator[PoolFactory | None]:
    """The Ray pool factory of ``--ray`` (its cluster closed at the end); None: local workers.

    A ``local:N`` cluster takes tens of seconds to start: one line on stderr says
    so first, unless ``quiet``.
    """
    if not ray:
        yield None
        return
    from protobench.engine.distributed.cluster import (  # noqa: PLC0415 - Ray only with --ray
        RayBackendError,
        open_backend,
        parse_spec,
    )
    from protobench.engine.distributed.pool import RayPoolFactory  # noqa: PLC0415

    try:
        _, simulated = parse_spec(ray)
        if simulated and not quiet:
            nodes = f"{simulated} node{'s' if simulated > 1 else ''}"
            echo(f"protobench: starting a local Ray cluster of {nodes}…", err=True)
        backend = open_backend(ray, plan.target is None)
    except RayBackendError as exc:
        fail(str(exc))
    try:
        yield RayPoolFactory(backend)
    finally:
        backend.close()


def run_headless(
    plan: RunPlan,
    store: SnapshotStore,
    target_pid: int | None = None,
    pool_factory: PoolFactory | None = None,
    *,
    quiet: bool,
    ndjson: bool = False,
    labels: dict[str, Any] | None = None,
) -> Report:
    """Run with a progress line on stderr (unless quiet) and the NDJSON stream (if asked);
    ``labels`` as :func:`run_plan`'s (a sweep's runs)."""
    from protobench.cli.ndjson import NdjsonSink  # noqa: PLC0415 - anyio: not for --help
    from protobench.engine.sinks import Each  # noqa: PLC0415

    sinks: list[Sink] = []
    progress = None if quiet else Progress(plan.duration, plan.warmup, requests=plan.requests)
    if progress is not None:
        sinks.append(Each("progress", progress, blocking=True))
    if ndjson:
        sinks.append(NdjsonSink())
    report = run_plan(plan, store, sinks, target_pid, labels, pool_factory)
    if progress is not None:
        progress.close()
    return report


def _exit_code(report: Report) -> int:
    from protobench.engine.report import exit_code_for  # noqa: PLC0415

    return exit_code_for(report)


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
            echo(f"protobench: {line}", err=True)


def _print_report(report: Report, as_json: bool) -> None:
    """The report on stdout, unless stdout is gone (a closed terminal, a closed pipe)."""
    with contextlib.suppress(OSError):
        if as_json:
            sys.stdout.write(report_to_json(report, indent=True).decode() + "\n")
            sys.stdout.flush()
        else:
            echo(summary_table(report))


def _run_interactive(
    plan: RunPlan,
    store: SnapshotStore,
    target_pid: int | None,
    baseline: Baseline | None = None,
    pool_factory: PoolFactory | None = None,
    *,
    quiet: bool = False,
) -> int:
    """Open the live monitor when it is installed, else run headless with a summary.

    Once the monitor has closed, the run's summary (the headless one: table,
    thresholds, verdicts, snapshot) goes to the terminal, where it stays in the
    scrollback; with ``quiet`` only how the run ended and where its snapshot is.
    """
    try:
        from protobench.tui.live import run_live  # noqa: PLC0415 - Textual loads only here
    except ImportError:
        headless = run_headless(plan, store, target_pid, pool_factory, quiet=quiet)
        say_snapshot_error(headless)
        _print_report(headless, as_json=False)
        return _exit_code(headless)
    ended = run_live(plan, store, target_pid, baseline, pool_factory=pool_factory)
    report = ended.report
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has no stdout
        if report is not None:
            say_snapshot_error(report)
            if quiet:
                partial = f" (partial: {report.stop_reason})" if report.partial else ""
                echo(f"protobench: run {report.profile} ended{partial}")
                if report.snapshot:
                    echo(f"snapshot {report.snapshot}")
            else:
                _print_report(report, as_json=False)
        if ended.error is not None:
            echo(f"protobench: error: {ended.error}", err=True)
    return ended.exit_code
