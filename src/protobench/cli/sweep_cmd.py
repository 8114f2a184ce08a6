"""``protobench sweep PROFILE --vary KEY=LEVELS``: run a profile at several load levels."""

from __future__ import annotations

import typer

from protobench.cli.common import fail


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_command() -> None:
        """Run a profile once per level and find the knee."""
        fail("sweep is being written (issue 4)")
