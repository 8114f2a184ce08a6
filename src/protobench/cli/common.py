"""Helpers shared by the CLI commands: error printing, flags and their values, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from protobench.cli.boundary import error
from protobench.profiles.settings import BY_NAME, parse_pair
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.flagnames import FlagNames


def flag_option(spec: FlagNames) -> Any:
    """The Typer option of a flag (a run setting's or a one-line run's): its names,
    placeholder, ``--help`` line and environment variable (a run setting's)."""
    return typer.Option(
        *spec.names,
        help=spec.help,
        metavar=spec.metavar or None,
        envvar=spec.env,
        show_envvar=spec.env is not None,
    )


OptOption = Annotated[list[str] | None, flag_option(BY_NAME["options"])]
"""``--opt`` (the run setting ``options``), also for a command that runs no profile."""
QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress on stderr; after the monitor, no summary (its path)."
    ),
]
SnapshotsDirOption = Annotated[
    Path | None, typer.Option("--snapshots-dir", metavar="DIR", help="Where snapshots are saved.")
]
"""Flags that ``run`` and ``sweep`` share beside the run settings' (:mod:`.run_flags`)."""
StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--snapshots-dir",
        metavar="DIR",
        help="Snapshot store (default: $PROTOBENCH_HOME/snapshots, else the user's data dir).",
    ),
]
"""The store that ``diff``, ``report`` and ``snapshots`` read."""


def fail(message: str, code: int = ExitCode.BAD_INPUT) -> NoReturn:
    """Print an error on stderr (one line, secrets hidden) and exit with ``code``."""
    error(message)
    raise typer.Exit(code)


def parse_value[T](value: str | None, parser: Callable[[str], T], flag: str) -> T | None:
    """Parse an optional flag value; a bad one exits 2 naming the flag."""
    if value is None:
        return None
    try:
        return parser(value)
    except ValueError as exc:
        fail(f"{flag}: {exc}")


def parse_items[T](items: list[str], parser: Callable[[str], T], flag: str) -> list[T]:
    """Parse each value of a repeated flag; a bad one exits 2 naming the flag and the value."""
    parsed = []
    for item in items:
        try:
            parsed.append(parser(item))
        except ValueError as exc:
            fail(f"{flag} {item!r}: {exc}")
    return parsed


def parse_pairs(pairs: list[str], flag: str) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values as :func:`parse_scalar`)."""
    return dict(parse_items(pairs, parse_pair, flag))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()
