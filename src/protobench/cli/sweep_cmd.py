"""``protobench sweep PROFILE --vary KEY=LEVELS``: run a profile at several levels, find the knee.

Every level is a full run (warmup, sustain) saved as a snapshot labelled with
the sweep's group id, its axis and level. Progress goes to stderr; the table
(or ``--json``) to stdout. Every level's plan is resolved before the first
run, so a bad level fails at once (exit 2). Exit code 3 when the sweep was
interrupted, else 0.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from protobench.cli.common import QuietOption, SnapshotsDirOption, fail, print_json
from protobench.cli.complete import ProfileArgument
from protobench.cli.profile_arg import load_profile
from protobench.cli.render import us
from protobench.cli.run_cmd import run_headless
from protobench.cli.run_flags import RunFlags, takes_run_flags
from protobench.profiles.settings import VARY_KEYS
from protobench.protocols.registry import PluginError
from protobench.snapshots.store import SUFFIX, SnapshotStore
from protobench.termtext import echo, visible_tree
from protobench.vocab.exceptions import ExitCode

if TYPE_CHECKING:  # the engine and pydantic load in the command, not for --help
    from protobench.engine.plan import RunPlan
    from protobench.engine.report_model import Report
    from protobench.engine.sweep import Point, SweepResult

DEFAULT_STOP = "error_rate > 5%"
"""The --stop-on of a sweep without one (the engine's ``DEFAULT_STOP``, a test checks)."""


def _key(assignment: dict[str, Any]) -> str:
    return json.dumps(assignment, sort_keys=True)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}/s"


def _judged(points: list[Point]) -> str:
    """The line saying whose throughput and latency the table shows (and the knee judges)."""
    ops = sorted({(p.op, p.latency_kind) for p in points if p.op is not None})
    if not ops:
        return "throughput, p50, p99 and the knee: all ops (one kind of latency)"
    named = ", ".join(f"{op} ({KIND_TEXT.get(kind or '', kind)})" for op, kind in ops)
    return f"throughput, p50, p99 and the knee: op {named}; --op NAME judges another group"


KIND_TEXT = {
    "one_way": "end to end",
    "round_trip": "round trip",
    "to_ack": "to the acknowledgement",
    "local_write": "local write only",
}


def render_table(result: SweepResult) -> str:
    """The sweep as a table: one row per run, the knee, generator-bound and host-saturated
    runs marked (its strings made visible)."""
    from protobench.engine.sweep import describe  # noqa: PLC0415

    result = visible_tree(result)

    keys = [axis.key for axis in result.axes]
    header = [*keys, "throughput", "p50", "p99", "errors", "gen cpu", "target cpu", "", "snapshot"]
    lines = [header]
    for index, point in enumerate(result.points):
        marks = []
        if index in result.knees:
            marks.append("<- knee")
        if point.generator_bound:
            marks.append("GENERATOR-BOUND")
        if point.host_saturated:
            marks.append("HOST-SATURATED")
        if point.partial:
            marks.append("PARTIAL")
        snapshot = Path(point.snapshot).name.removesuffix(SUFFIX) if point.snapshot else "-"
        lines.append(
            [
                *(str(point.assignment[k]) for k in keys),
                _rate(point.throughput),
                us(point.p50),
                us(point.p99),
                "-" if point.error_rate is None else f"{point.error_rate:.2%}",
                _pct(point.generator_cpu),
                _pct(point.target_cpu),
                " ".join(marks),
                snapshot,
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = [f"sweep {result.group}: {len(result.points)} runs"]
    out.extend(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
    out.append(_judged(result.points))
    out.append("gen cpu: all worker processes, % of one core (mean over sustain); target cpu: same")
    if any(point.host_saturated for point in result.points):
        out.append(
            "HOST-SATURATED: other processes kept the host's CPU busy in that run: its figures "
            "are the host's limit as much as the target's"
        )
    for index in result.knees:
        out.append(f"knee: {describe(result.points[index].assignment)}")
    out.extend(f"knee: {note}" for note in result.notes)
    if not result.knees and not result.notes:
        out.append("knee: none found (throughput kept rising, or latency did not climb)")
    out.extend(f"stopped: {stop}" for stop in result.stops)
    out.extend(f"skipped: {describe(level)}" for level in result.skipped)
    return "\n".join(out)


@takes_run_flags
def sweep_command(
    profile: ProfileArgument,
    vary: Annotated[
        list[str],
        typer.Option(
            "--vary",
            metavar="KEY=LEVELS",
            help=f"KEY=L1,L2,... (repeatable): {', '.join(VARY_KEYS)}. The first is the load axis.",
        ),
    ],
    stop_on: Annotated[
        list[str] | None,
        typer.Option(
            "--stop-on",
            metavar="EXPR",
            help=f"Skip the higher levels once this holds (repeatable; default '{DEFAULT_STOP}').",
        ),
    ] = None,
    *,
    flags: RunFlags,
    op: Annotated[
        str | None,
        typer.Option(
            "--op",
            metavar="NAME",
            help="The group whose throughput and latency are shown and judged for the knee "
            "(default: all ops when they measure one kind of latency, else the end-to-end one, "
            "e.g. MQTT's subscribers).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the sweep as JSON.")] = False,
    quiet: QuietOption = False,
    snapshots_dir: SnapshotsDirOption = None,
) -> None:
    """Run a profile once per level of each --vary axis; mark the knee; stop on errors.

    \b
    Examples:
      protobench sweep http-get --vary connections=8,32,128 -d 10s
      protobench sweep mqtt-qos1 --vary rate=1000/s,5000/s,20000/s --json
      protobench sweep mqtt-fanout --vary connections=10,50,200 --op publish
      protobench sweep http://127.0.0.1:8080/api --vary connections=10,50,200 -n 20000

    \b
    Exit codes: 0 done, 2 bad input (a bad level fails before any run),
    3 interrupted.
    """
    from protobench.engine.plan import resolve  # noqa: PLC0415
    from protobench.engine.sweep import Sweep, apply_level, describe, parse_axis  # noqa: PLC0415
    from protobench.profiles import loader  # noqa: PLC0415

    try:
        axes = [parse_axis(v) for v in vary]
    except ValueError as exc:
        fail(f"--vary: {exc}")
    try:
        sweep = Sweep(axes, stop_on or [DEFAULT_STOP], op=op)
    except ValueError as exc:
        fail(f"--stop-on: {exc}" if stop_on else str(exc))
    first = load_profile(profile, flags)
    base = first.flags.overrides()
    plans: dict[str, RunPlan] = {}
    for level in sweep.levels():
        try:
            plans[_key(level)] = resolve(first.loaded, apply_level(base, level))
        except (loader.ProfileError, PluginError) as exc:
            fail(f"--vary {describe(level)}: {exc}")
    groups = {group.name for plan in plans.values() for group in plan.groups}
    if op is not None and op not in groups:
        fail(f"--op: no group {op!r} in {profile} (its groups: {', '.join(sorted(groups))})")
    store = SnapshotStore(snapshots_dir)
    runner = LevelRunner(plans, store, quiet)
    result = sweep.run(runner, on_point=runner.done.append)
    if as_json:
        print_json(result.to_dict())
    else:
        echo(render_table(result))
    sys.stdout.flush()
    raise typer.Exit(ExitCode.INCOMPLETE if result.interrupted else ExitCode.OK)


@dataclass
class LevelRunner:
    """Runs each level of a sweep headless, kept in ``store``, with a progress line unless
    ``quiet``; ``done`` holds the points so far (the sweep appends them)."""

    plans: dict[str, RunPlan]
    store: SnapshotStore
    quiet: bool
    done: list[Point] = field(default_factory=list)

    def __call__(self, level: dict[str, Any], labels: dict[str, Any]) -> Report:
        from protobench.engine.sweep import describe  # noqa: PLC0415

        if not self.quiet:
            echo(f"[{len(self.done) + 1}/{len(self.plans)}] {describe(level)}", err=True)
        return run_headless(self.plans[_key(level)], self.store, quiet=self.quiet, labels=labels)


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_command)
