"""The commands of ``protobench``, declared once, and the root's help text (no Typer here).

:data:`COMMANDS` names each command's module and its one-line summary (the first
line of its help). A command is imported when it is used (:meth:`Lazy.load`), so
the root's help lists them from this table alone; :mod:`.roothelp` prints that help
without importing Typer at all.
"""

from __future__ import annotations

import importlib


class Lazy:
    """Where a command lives and its one-line summary (the first line of its help).

    A plain class, not a dataclass: the root's help imports neither dataclasses
    nor typing (:mod:`.roothelp`).
    """

    __slots__ = ("module", "summary")

    def __init__(self, module: str, summary: str) -> None:
        self.module = module
        self.summary = summary

    def load(self, name: str) -> object:
        """Import the module and build its Click command, named ``name``."""
        import typer  # noqa: PLC0415 - the command line, once a command is used
        import typer.main  # noqa: PLC0415

        from protobench.cli.helpfmt import readable  # noqa: PLC0415
        from protobench.cli.lazy import FlagsOff  # noqa: PLC0415

        module = importlib.import_module(self.module)
        parent = typer.Typer(rich_markup_mode=None, add_completion=False)
        group = getattr(module, "app", None)
        if group is not None:
            parent.add_typer(group, name=name, cls=FlagsOff)
        else:
            module.register(parent)
        command = typer.main.get_group(parent).commands[name]
        readable(command)
        return command


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

ROOT_HELP = """\
Benchmark runner and live monitor for HTTP, WebSocket, MQTT, BACnet, Haystack and Beckn.

\b
Start here:
  protobench profiles list               the built-in workloads
  protobench run http-get                a run against the embedded HTTP target
  protobench run mqtt-qos1 -t mqtt://127.0.0.1:1883/ -d 30s
  protobench snapshots list              saved runs ($PROTOBENCH_HOME, else your data dir)
  protobench diff latest~1 latest        did it get faster?

\b
Exit codes: 0 ok, 1 a threshold or gate failed, 2 bad input, 3 the run
could not complete, 4 a diff gate could not decide, 5 the snapshot was not
saved in the store, 130 interrupted. Every command's --help has examples."""
"""The root's help text (``protobench --help``), as Click reads a docstring."""

VERSION_HELP = "Print the version (and the git commit of a development install)."
