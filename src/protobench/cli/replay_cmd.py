"""``protobench replay SNAPSHOT``: play a saved run through the live monitor's screens.

The snapshot's intervals, resource samples and notices are replayed at their
recorded pace divided by ``--speed``; the monitor allows pausing (``p``),
seeking (left/right arrows) and changing the speed (``+``/``-``). When stdout
is not a terminal the snapshot's summary table is printed instead; when the
monitor closes, the same summary is printed, so it stays in the terminal's
scrollback (``--quiet``: not).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from protobench.cli.baseline_opt import BaselineOption, load_baseline
from protobench.cli.common import QuietOption, fail
from protobench.cli.complete import SnapshotRef
from protobench.cli.render import summary_table
from protobench.snapshots.store import SnapshotError, SnapshotStore, read, read_json
from protobench.termtext import echo

if TYPE_CHECKING:
    from protobench.engine.report_model import Report


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
    quiet: QuietOption = False,
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
        path = store.resolve(snapshot)
        head = read_json(path)  # the whole check (pydantic) waits for the monitor's first frame
    except SnapshotError as exc:
        fail(str(exc))
    compared = load_baseline(store, baseline)
    run_replay = _monitor() if sys.stdout.isatty() else None
    try:
        if run_replay is None:  # no terminal, or no Textual: the summary alone
            echo(summary_table(read(path, head).report))
            return
        report = run_replay(path, head, store, speed, compared)
        if not quiet:
            echo(summary_table(report or read(path, head).report))
    except SnapshotError as exc:
        fail(str(exc))


def _monitor() -> Callable[..., Report | None] | None:
    """The replay's monitor (Textual loads only here), or None when Textual is not installed."""
    try:
        from protobench.tui.replay import run_replay  # noqa: PLC0415
    except ImportError:
        return None
    return run_replay


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)
