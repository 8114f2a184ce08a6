"""``protobench report REF [-o FILE]``: a saved run as one self-contained HTML page.

:func:`write_run_report` and :func:`write_diff_report` are also what ``run
--report`` and ``diff --report`` call. The report package is imported only
here, when a page is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from protobench.cli.common import StoreOption, fail
from protobench.cli.complete import SnapshotRef
from protobench.cli.diff_text import render_text
from protobench.snapshots.store import SnapshotError, SnapshotStore
from protobench.termtext import echo

if TYPE_CHECKING:
    from protobench.snapshots.diff import Diff
    from protobench.snapshots.model import Snapshot


def _write(path: Path, page: str) -> None:
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        fail(f"{path}: cannot write the report ({exc.strerror or exc})")
    echo(f"wrote {path} ({len(page.encode()) / 1024:,.0f} KiB)", err=True)


def write_run_report(snapshot: Snapshot, path: Path) -> None:
    """Write the report page of one saved run."""
    from protobench.htmlreport.page import run_page  # noqa: PLC0415
    from protobench.htmlreport.view import run_view  # noqa: PLC0415

    _write(path, run_page(run_view(snapshot)))


def write_diff_report(base: list[Snapshot], new: list[Snapshot], diff: Diff, path: Path) -> None:
    """Write the comparison page of ``diff``."""
    from protobench.htmlreport.compare import compare_page  # noqa: PLC0415
    from protobench.htmlreport.view import run_view  # noqa: PLC0415

    views = [run_view(s) for s in base], [run_view(s) for s in new]
    _write(path, compare_page(*views, diff, render_text(diff), diff.profile))


def report_command(
    ref: SnapshotRef,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="The HTML file (default: ./<snapshot id>.html)."
        ),
    ] = None,
    snapshots_dir: StoreOption = None,
) -> None:
    """Write a saved run as one HTML page that works offline.

    \b
    Examples:
      protobench report latest
      protobench report latest~2 -o before.html

    \b
    Exit codes: 0 written, 2 bad input (no such snapshot, a file that cannot
    be written).
    """
    try:
        snapshot = SnapshotStore(snapshots_dir).load(ref)
    except SnapshotError as exc:
        fail(str(exc))
    write_run_report(snapshot, output or Path(f"{snapshot.id}.html"))


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
