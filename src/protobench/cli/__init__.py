"""The ``protobench`` command: a thin Typer layer over pure functions.

Each command parses its arguments, calls a function that returns data and an
exit code, and prints: results on stdout, diagnostics on stderr. Textual is
imported only by the commands that open the monitor, so ``--help`` and headless
runs stay fast. Exit codes: 0 ok, 1 thresholds failed (or a diff gate), 2 bad
input, 3 the run could not complete; :mod:`protobench.cli.boundary` maps every
error of every command to one of them, with one line on stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from protobench import __version__
from protobench.cli import (
    beckn_cmd,
    boundary,
    diff_cmd,
    discover_cmd,
    profiles_cmd,
    replay_cmd,
    report_cmd,
    run_cmd,
    serve_cmd,
    snapshots_cmd,
    sweep_cmd,
)

app = typer.Typer(
    name="protobench",
    cls=boundary.Boundary,
    help="Benchmark runner and live monitor for HTTP, WebSocket, MQTT, BACnet, Haystack and Beckn.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"protobench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Benchmark runner and live monitor for building and IoT protocols."""


run_cmd.register(app)
replay_cmd.register(app)
serve_cmd.register(app)
diff_cmd.register(app)
sweep_cmd.register(app)
discover_cmd.register(app)
report_cmd.register(app)
app.add_typer(profiles_cmd.app, name="profiles")
app.add_typer(snapshots_cmd.app, name="snapshots")
app.add_typer(beckn_cmd.app, name="beckn")


def main() -> int:
    """The console script: the exit code of the command line (see :mod:`.boundary`)."""
    code: int = app(standalone_mode=False)
    return code
