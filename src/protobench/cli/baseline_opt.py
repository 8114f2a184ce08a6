"""``--baseline REF`` of ``run`` and ``replay``: the snapshot the monitor compares with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from protobench.cli.common import fail
from protobench.snapshots.store import SnapshotError, SnapshotStore

if TYPE_CHECKING:
    from protobench.tui.baseline import Baseline

BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        metavar="REF",
        help="Compare with this snapshot in the monitor (id, prefix, path, latest~N).",
    ),
]


def load_baseline(store: SnapshotStore, ref: str | None) -> Baseline | None:
    """The baseline ``ref`` names, read before anything starts; a bad one exits 2 on one line."""
    if ref is None:
        return None
    from protobench.tui.baseline import Baseline  # noqa: PLC0415 - the monitor's code, on use

    try:
        return Baseline.load(store, ref)
    except SnapshotError as exc:
        fail(f"--baseline: {exc}")
