"""``protobench diff BASE NEW``: compare runs with real statistics."""

from __future__ import annotations

import typer

from protobench.cli.common import fail


def register(app: typer.Typer) -> None:
    @app.command("diff")
    def diff_command() -> None:
        """Compare two runs (or two sets of runs)."""
        fail("diff is being written (issue 4)")
