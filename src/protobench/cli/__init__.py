"""The ``protobench`` command: a thin Typer layer over pure functions.

Each command parses its arguments, calls a function that returns data and an
exit code, and prints: results on stdout, diagnostics on stderr. :data:`COMMANDS`
is the one list of commands: each is imported when it is used
(:mod:`.lazy`), and a command module imports the engine, pydantic, numpy or a
protocol library only inside its function, so ``--help``, ``--version`` and
every command's ``--help`` import none of them (``tests/cli/test_start.py``).
Exit codes: 0 ok, 1 thresholds failed (or a diff gate), 2 bad input, 3 the run
could not complete, 4 a diff gate could not decide, 5 the snapshot was not
saved in the store; :mod:`protobench.cli.boundary` maps every error of every
command to one of them, with one line on stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from protobench.cli.lazy import Lazy, LazyGroup

COMMANDS = {
    "run": Lazy(
        "protobench.cli.run_cmd", "Run a profile: warmup, sustain, report, thresholds, snapshot."
    ),
    "replay": Lazy(
        "protobench.cli.replay_cmd",
        "Replay a saved run in the monitor (pause, seek, change speed).",
    ),
    "serve": Lazy(
        "protobench.cli.serve_cmd",
        "Serve an embedded target; its own options follow as --name value.",
    ),
    "diff": Lazy(
        "protobench.cli.diff_cmd",
        "Compare runs: medians with 95% CIs, Mann-Whitney U, percentile deltas, gates.",
    ),
    "sweep": Lazy(
        "protobench.cli.sweep_cmd",
        "Run a profile once per level of each --vary axis; mark the knee; stop on errors.",
    ),
    "discover": Lazy(
        "protobench.cli.discover_cmd",
        "Ask a device or server what it has; write a profile fitted to it.",
    ),
    "report": Lazy(
        "protobench.cli.report_cmd", "Write a saved run as one HTML page that works offline."
    ),
    "profiles": Lazy("protobench.cli.profiles_cmd", "List, show and create workload profiles."),
    "beckn": Lazy("protobench.cli.beckn_cmd", "Beckn helpers: keys for a registry."),
    "snapshots": Lazy("protobench.cli.snapshots_cmd", "List and inspect saved runs."),
    "schema": Lazy(
        "protobench.cli.schema_cmd",
        "Print a published JSON Schema: report, NDJSON event, snapshot, diff --json, profile.",
    ),
}
"""Every command: its module and the summary ``protobench --help`` shows (its help's first line)."""


class Root(LazyGroup):
    """The ``protobench`` group: :data:`COMMANDS`, loaded on first use."""

    table = COMMANDS


app = typer.Typer(
    name="protobench",
    cls=Root,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from protobench.cli.version import version_line  # noqa: PLC0415 - only for --version

        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version (and the git commit of a development install).",
        ),
    ] = False,
) -> None:
    """Benchmark runner and live monitor for HTTP, WebSocket, MQTT, BACnet, Haystack and Beckn.

    \b
    Start here:
      protobench profiles list               the built-in workloads
      protobench run http-get                a run against the embedded HTTP target
      protobench run mqtt-qos1 -t mqtt://127.0.0.1:1883/ -d 30s
      protobench snapshots list              saved runs (in $PROTOBENCH_HOME, else ./.protobench)
      protobench diff latest~1 latest        did it get faster?

    \b
    Exit codes: 0 ok, 1 a threshold or gate failed, 2 bad input, 3 the run
    could not complete, 4 a diff gate could not decide, 5 the snapshot was not
    saved in the store, 130 interrupted. Every command's --help has examples.
    """


def main() -> int:
    """The console script: the exit code of the command line (see :mod:`.boundary`)."""
    code: int = app(prog_name="protobench", standalone_mode=False)  # python -m too
    return code
