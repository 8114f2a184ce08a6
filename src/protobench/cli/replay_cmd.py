"""``protobench replay SNAPSHOT``: play a saved run through the live monitor's screens.

The snapshot's intervals, resource samples and notices are replayed at their
recorded pace divided by ``--speed``; the monitor allows pausing (``p``),
seeking (left/right arrows) and changing the speed (``+``/``-``). When stdout
is not a terminal the snapshot's summary table is printed instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.baseline_opt import BaselineOption, load_baseline
from protobench.cli.common import fail
from protobench.cli.complete import SnapshotRef
from protobench.cli.render import summary_table
from protobench.snapshots.store import SnapshotError, SnapshotStore
from protobench.termtext import echo


def replay_command(
    snapshot: SnapshotRef = "latest",
    speed: Annotated[
        float, typer.Option("--speed", metavar="FACTOR", help="Playback speed (2 = twice as fast).")
    ] = 1.0,
    snapshots_dir: Annotated[
        Path | None,
        typer.Option("--snapshots-dir", metavar="DIR", help="Where snapshots are kept."),
    ] = None,
    baseline: BaselineOption = None,
) -> None:
    """Replay a saved run in the monitor (pause, seek, change speed).

    \b
    Examples:
      protobench replay                  the latest run
      protobench replay latest~1 --speed 4

    \b
    Exit codes: 0 ok, 2 bad input (no such snapshot, a bad file).
    """
    if not 0 < speed <= 1000:
        fail("--speed: expected a number between 0 and 1000")
    store = SnapshotStore(snapshots_dir)
    try:
        data = store.load(snapshot)
        report = data.report
    except SnapshotError as exc:
        fail(str(exc))
    compared = load_baseline(store, baseline)
    if not sys.stdout.isatty():
        echo(summary_table(report))
        return
    from protobench.tui.live import run_replay  # noqa: PLC0415 - Textual loads only here

    raise typer.Exit(run_replay(data, store, speed, compared))


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)
