"""``protobench snapshots list | show ID | export ID | prune --keep N``.

Every snapshot read is validated (:func:`protobench.snapshots.store.read`): a
bad reference or file is one error line and exit 2 for ``show`` and
``export``; ``list`` skips a bad file with a warning on stderr and goes on.
What is shown or exported passes through :func:`~protobench.snapshots.store.redacted`.
"""

from __future__ import annotations

import io
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from protobench.cli.common import StoreOption, fail, print_json
from protobench.cli.complete import SnapshotRef
from protobench.cli.render import summary_table, us
from protobench.engine.report_model import to_plain
from protobench.engine.stacks.model import TOP
from protobench.snapshots.prune import prune
from protobench.snapshots.store import SnapshotError, SnapshotStore, redacted
from protobench.termtext import echo

app = typer.Typer(help="List and inspect saved runs.", no_args_is_help=True)


@app.command("list")
def list_snapshots(
    snapshots_dir: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List snapshots, oldest first.

    \b
    Examples:
      protobench snapshots list
      PROTOBENCH_HOME=~/bench protobench snapshots list --json

    \b
    Exit codes: 0 ok (a bad file is skipped with a warning).
    """
    store = SnapshotStore(snapshots_dir)
    rows: list[dict[str, Any]] = []
    for path in store.paths():
        try:
            data = store.load(str(path))
        except SnapshotError as exc:
            echo(f"protobench: warning: skipping {exc}", err=True)
            continue
        report = data.report
        total = report.sustain.total if report.sustain else None
        rows.append(
            {
                "id": data.id,
                "created_at": data.created_at,
                "profile": report.profile,
                "protocol": report.protocol,
                "partial": data.partial,
                "throughput": total.throughput if total else None,
                "p99_us": total.latency_us.p99 if total else None,
                "error_rate": total.error_rate if total else None,
                "path": str(path),
            }
        )
    if as_json:
        print_json(rows)
        return
    for row in rows:
        flag = " PARTIAL" if row["partial"] else ""
        throughput = row["throughput"] or 0.0
        echo(
            f"{row['id']:44} {row['protocol']:10} {throughput:>11,.1f}/s "
            f"p99 {us(row['p99_us']):>8}{flag}"
        )


@app.command("show")
def show(
    ref: SnapshotRef,
    snapshots_dir: StoreOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole snapshot as JSON.")
    ] = False,
) -> None:
    """Show a snapshot's report.

    \b
    Examples:
      protobench snapshots show latest
      protobench snapshots show 20260101-1200 --json

    \b
    Exit codes: 0 ok, 2 bad input (no such snapshot, a bad file).
    """
    store = SnapshotStore(snapshots_dir)
    try:
        path = store.resolve(ref)
        data = redacted(store.load(str(path)))
    except SnapshotError as exc:
        fail(str(exc))
    if as_json:
        print_json(to_plain(data))
        return
    try:
        table = summary_table(replace(data.report, snapshot=str(path)), profile_top=TOP)
    except SnapshotError as exc:
        fail(f"{path}: the report cannot be shown ({exc})")
    prov = data.provenance
    echo(f"snapshot {data.id}  created {data.created_at}")
    echo(
        f"host {prov.get('host', '?')}  cpu {prov.get('cpu_model', '?')} "
        f"x{prov.get('cpu_count', '?')}  python {prov.get('python', '?')}  "
        f"protobench {prov['tool_version']}"
    )
    echo(table)


@app.command("export")
def export_snapshot(
    ref: SnapshotRef,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="hlog (HdrHistogram interval log), hgrm (percentile distribution, ms), "
            "csv (interval series), json, or the target profile as speedscope, collapsed "
            "or pprof (default: from the -o suffix; .pb.gz is pprof, .folded collapsed).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write here instead of stdout."),
    ] = None,
    phase: Annotated[
        str,
        typer.Option(
            metavar="PHASE", help="Phase of hlog/hgrm/csv: sustain, warmup, drain or all."
        ),
    ] = "sustain",
    snapshots_dir: StoreOption = None,
) -> None:
    """Export a snapshot as an HdrHistogram log or percentile distribution, a CSV, or JSON.

    \b
    Examples:
      protobench snapshots export latest -o run.hlog
      protobench snapshots export latest -f hgrm > run.hgrm
      protobench snapshots export latest~1 -f csv --phase all > intervals.csv
      protobench snapshots export latest -f pprof -o target.pb.gz   (go tool pprof)

    \b
    Exit codes: 0 ok, 2 bad input (no such snapshot, format, phase, a file
    that cannot be written).
    """
    from protobench.snapshots.export import FORMATS, PHASES, export  # noqa: PLC0415 - numpy
    from protobench.snapshots.profile_export import (  # noqa: PLC0415
        PROFILE_FORMATS,
        export_profile,
    )

    formats = (*FORMATS, *PROFILE_FORMATS)
    if fmt is None:
        suffix = output.suffix.lstrip(".") if output else ""
        if output is not None and output.name.endswith(".pb.gz"):
            suffix = "pprof"
        suffix = {"folded": "collapsed"}.get(suffix, suffix)
        if suffix not in formats:
            fail(f"--format: give one of {', '.join(formats)}")
        fmt = suffix
    if fmt not in formats:
        fail(f"--format {fmt!r}: expected one of {', '.join(formats)}")
    if phase not in PHASES:
        fail(f"--phase {phase!r}: expected one of {', '.join(PHASES)}")
    if fmt == "pprof" and output is None and sys.stdout.isatty():
        fail("--format pprof is binary: give -o FILE or redirect stdout")
    store = SnapshotStore(snapshots_dir)
    buffer = io.StringIO(newline="")
    try:
        snapshot = redacted(store.load(ref))
        if fmt in PROFILE_FORMATS:
            data = export_profile(snapshot, fmt)
        else:
            export(snapshot, fmt, buffer, phase)
            data = buffer.getvalue().encode()
    except SnapshotError as exc:
        fail(str(exc))
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        output.write_bytes(data)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    echo(f"wrote {output}", err=True)


@app.command("prune")
def prune_snapshots(
    keep: Annotated[
        int, typer.Option("--keep", metavar="N", help="How many of the newest snapshots to keep.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be removed; remove nothing.")
    ] = False,
    snapshots_dir: StoreOption = None,
) -> None:
    """Remove all but the newest --keep snapshots, with their logs.

    Only files that read as snapshots count and are removed; anything else
    (an unreadable file, a symbolic link) is left alone, with a warning.

    \b
    Examples:
      protobench snapshots prune --keep 20 --dry-run
      protobench snapshots prune --keep 20

    \b
    Exit codes: 0 ok, 2 bad input.
    """
    if keep < 0:
        fail("--keep: expected a number >= 0")
    pruning = prune(SnapshotStore(snapshots_dir), keep, dry_run)
    for why in pruning.skipped:
        echo(f"protobench: warning: left alone {why}", err=True)
    verb = "would remove" if dry_run else "removed"
    for path in pruning.removed:
        echo(f"{verb} {path.name}")
    echo(f"{verb} {len(pruning.removed)} snapshots, kept {len(pruning.kept)}")
