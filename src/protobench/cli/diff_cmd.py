"""``protobench diff BASE NEW``: compare runs with real statistics, like benchstat.

``protobench diff BASE1 BASE2 -- NEW1 NEW2`` compares several runs on each
side (their intervals are pooled). References are snapshot ids, id prefixes,
paths, ``latest`` or ``latest~N``. The text output (:mod:`.diff_text`) is one block per metric:
each side's median ± the 95% confidence interval (as a share of the median),
the change with the Mann-Whitney p-value and sample sizes (``~`` when not
significant at ``--alpha``, ``?`` when the row has too few samples to decide),
and the whole-phase figures of both sides.
Exit codes: 0; 1 when a ``--fail-on`` gate is crossed; 2 on bad input; 4 when a
gate cannot decide (too few samples, other protocols or operations) and none is
crossed, unless ``--accept-inconclusive``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from protobench.cli import report_cmd
from protobench.cli.common import StoreOption, fail, print_json
from protobench.cli.complete import snapshot_refs
from protobench.cli.diff_text import render_text
from protobench.snapshots.store import SnapshotError, SnapshotStore
from protobench.termtext import echo
from protobench.vocab.percentiles import PERCENTILE_LABELS

if TYPE_CHECKING:  # numpy and hdrhistogram load in the command, not for --help
    from protobench.snapshots.model import Snapshot

_NEW_SIDE = "protobench.diff.new"


class DiffCommand(TyperCommand):
    """Keeps the references after ``--`` apart: they are the NEW side.

    Options may still follow them (``A -- B --json``): the NEW side ends at the
    first word that starts with ``-``.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            tail = args[split + 1 :]
            end = next((i for i, word in enumerate(tail) if word.startswith("-")), len(tail))
            ctx.meta[_NEW_SIDE] = tail[:end]
            args = args[:split] + tail[end:]
        return super().parse_args(ctx, args)


def _load(store: SnapshotStore, refs: list[str]) -> list[Snapshot]:
    snapshots = []
    for ref in refs:
        try:
            snapshots.append(store.load(ref))
        except SnapshotError as exc:
            fail(str(exc))
    return snapshots


def diff_command(
    ctx: typer.Context,
    refs: Annotated[
        list[str],
        typer.Argument(
            metavar="REF...",
            help="BASE NEW, or BASE... -- NEW... (ids, id prefixes, paths, latest, latest~N).",
            autocompletion=snapshot_refs,
        ),
    ],
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            "-m",
            metavar="LIST",
            help=f"Comma-separated metrics: throughput,{','.join(PERCENTILE_LABELS.values())},"
            "error_rate,delay_p50,delay_p99 (default: all; the generator's delay when measured).",
        ),
    ] = None,
    alpha: Annotated[
        float, typer.Option(metavar="ALPHA", help="Significance level of the Mann-Whitney U test.")
    ] = 0.05,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            metavar="GATE",
            help="Exit 1 when a significant change crosses this gate, e.g. 'p99:+10%', "
            "'throughput:-5%', 'get:p50:+20%', '*:p99:+10%' (repeatable). A gate that "
            "cannot decide (fewer than 6 intervals a side, other protocols or "
            "operations) exits 4.",
        ),
    ] = None,
    accept_inconclusive: Annotated[
        bool,
        typer.Option(
            "--accept-inconclusive",
            help="Exit 0 rather than 4 when a gate cannot decide (it is still shown).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    snapshots_dir: StoreOption = None,
    report_file: Annotated[
        Path | None,
        typer.Option(
            "--report", metavar="FILE", help="Also write the comparison as one HTML page."
        ),
    ] = None,
) -> None:
    """Compare runs: medians with 95% CIs, Mann-Whitney U, percentile deltas, gates.

    \b
    Examples:
      protobench diff latest~1 latest
      protobench diff base1 base2 -- new1 new2 --fail-on 'p99:+10%'
      protobench diff latest~1 latest --json --report diff.html

    \b
    Exit codes: 0 ok; 1 a --fail-on gate was crossed; 2 bad input (reference,
    snapshot file, flag); 4 a gate could not decide (too few samples) and
    --accept-inconclusive was not given.
    """
    from protobench.snapshots.diff import compare, parse_gate  # noqa: PLC0415

    base_refs, new_refs = _sides(refs, ctx.meta.get(_NEW_SIDE))
    if not 0 < alpha < 1:
        fail("--alpha: expected a number between 0 and 1")
    metrics = _metrics(metric)
    try:
        gates = [parse_gate(expr) for expr in fail_on or []]
    except ValueError as exc:
        fail(str(exc))
    store = SnapshotStore(snapshots_dir)
    base, new = _load(store, base_refs), _load(store, new_refs)
    try:
        diff = compare(
            base,
            new,
            metrics=metrics,
            alpha=alpha,
            gates=gates,
            accept_inconclusive=accept_inconclusive,
        )
    except (ValueError, SnapshotError) as exc:
        fail(str(exc))
    if report_file is not None:
        report_cmd.write_diff_report(base, new, diff, report_file)
    if as_json:
        print_json(diff.to_dict())
    else:
        echo(render_text(diff))
    raise typer.Exit(diff.exit_code)


def register(app: typer.Typer) -> None:
    app.command("diff", cls=DiffCommand)(diff_command)


def _sides(refs: list[str], new_refs: list[str] | None) -> tuple[list[str], list[str]]:
    """The BASE and NEW references: ``BASE NEW``, or ``BASE... -- NEW...``; exit 2 otherwise."""
    if new_refs is not None:
        if not refs or not new_refs:
            fail("give at least one run on each side of '--'")
        return list(refs), new_refs
    if len(refs) != 2:
        fail("give BASE NEW, or BASE1 BASE2 ... -- NEW1 NEW2 ...")
    return [refs[0]], [refs[1]]


def _metrics(chosen: str | None) -> tuple[str, ...]:
    """The canonical names of ``--metric`` (all of them by default); exit 2 on a bad one."""
    from protobench.snapshots.diff import METRICS, metric_name  # noqa: PLC0415

    text = ",".join(METRICS) if chosen is None else chosen
    try:
        metrics = tuple(dict.fromkeys(metric_name(m) for m in text.split(",") if m.strip()))
    except ValueError as exc:
        fail(str(exc))
    if not metrics:
        fail("--metric: expected at least one metric")
    return metrics
