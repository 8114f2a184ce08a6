"""``protobench snapshots list | show ID``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.common import fail, print_json
from protobench.cli.render import summary_table, us
from protobench.snapshots.store import SnapshotError, SnapshotStore

app = typer.Typer(help="List and inspect saved runs.", no_args_is_help=True)

DirOption = Annotated[
    Path | None,
    typer.Option("--snapshots-dir", help="Snapshot store (default ./.protobench/snapshots)."),
]


@app.command("list")
def list_snapshots(
    snapshots_dir: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List snapshots, oldest first."""
    store = SnapshotStore(snapshots_dir)
    rows = []
    for path in store.paths():
        try:
            data = store.load(str(path))
        except SnapshotError as exc:
            typer.echo(f"skipping {exc}", err=True)
            continue
        report = data["report"]
        total = report["phases"].get("sustain", {}).get("total", {})
        rows.append(
            {
                "id": data["id"],
                "created_at": data["created_at"],
                "profile": report["profile"],
                "protocol": report["protocol"],
                "partial": data["partial"],
                "throughput": total.get("throughput"),
                "p99_us": total.get("latency_us", {}).get("p99"),
                "error_rate": total.get("error_rate"),
                "path": str(path),
            }
        )
    if as_json:
        print_json(rows)
        return
    for row in rows:
        flag = " PARTIAL" if row["partial"] else ""
        throughput = row["throughput"] or 0.0
        typer.echo(
            f"{row['id']:44} {row['protocol']:10} {throughput:>11,.1f}/s "
            f"p99 {us(row['p99_us']):>8}{flag}"
        )


@app.command("show")
def show(
    ref: Annotated[str, typer.Argument(help="Id, id prefix, path, latest or latest~N.")],
    snapshots_dir: DirOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole snapshot as JSON.")
    ] = False,
) -> None:
    """Show a snapshot's report."""
    store = SnapshotStore(snapshots_dir)
    try:
        data = store.load(ref)
    except SnapshotError as exc:
        fail(str(exc))
    if as_json:
        print_json(data)
        return
    typer.echo(f"snapshot {data['id']}  created {data['created_at']}")
    prov = data["provenance"]
    typer.echo(
        f"host {prov['host']}  cpu {prov['cpu_model']} x{prov['cpu_count']}  "
        f"python {prov['python']}  protobench {prov['tool_version']}"
    )
    typer.echo(summary_table({**data["report"], "snapshot": str(store.resolve(ref))}))
