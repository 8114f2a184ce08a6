"""Helpers shared by the CLI commands: error printing, key=value flags, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from protobench.cli.boundary import EXIT_BAD_INPUT, error
from protobench.vocab.units import parse_duration, parse_rate, parse_scalar

if TYPE_CHECKING:
    from protobench.engine.plan import Overrides

TargetOption = Annotated[
    str | None, typer.Option("--target", "-t", help="Target URL (default: embedded).")
]
DurationOption = Annotated[
    str | None, typer.Option("--duration", "-d", help="Sustain phase, e.g. 30s.")
]
WarmupOption = Annotated[str | None, typer.Option("--warmup", help="Warmup phase, e.g. 5s.")]
IntervalOption = Annotated[str | None, typer.Option("--interval", help="Report interval, e.g. 1s.")]
ConnectionsOption = Annotated[
    int | None,
    typer.Option("--connections", "-c", help="Sessions of the back-to-back groups."),
]
RateOption = Annotated[
    str | None, typer.Option("--rate", "-r", help="Open model: total rate, e.g. 20000/s.")
]
ProcessesOption = Annotated[
    int | None, typer.Option("--processes", "-p", help="Worker processes (default: cores).")
]
OptOption = Annotated[
    list[str] | None, typer.Option("--opt", "-o", help="Protocol option KEY=VALUE (repeatable).")
]
ServeOptOption = Annotated[
    list[str] | None,
    typer.Option("--serve-opt", help="Embedded target option KEY=VALUE (repeatable)."),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")]
SnapshotsDirOption = Annotated[
    Path | None, typer.Option("--snapshots-dir", help="Where snapshots are saved.")
]
"""The flags that ``run`` and ``sweep`` share, declared once."""
StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--snapshots-dir",
        help="Snapshot store (default: $PROTOBENCH_HOME/snapshots, else ./.protobench/snapshots).",
    ),
]
"""The store that ``diff``, ``report`` and ``snapshots`` read."""


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print an error on stderr (one line, secrets hidden) and exit with ``code``."""
    error(message)
    raise typer.Exit(code)


def parse_pairs(pairs: list[str], flag: str) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values as :func:`parse_scalar`)."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or not key.strip():
            fail(f"{flag} {pair!r}: expected KEY=VALUE")
        values[key.strip()] = parse_scalar(raw)
    return values


def parse_value[T](value: str | None, parser: Callable[[str], T], flag: str) -> T | None:
    """Parse an optional flag value; a bad one exits 2 naming the flag."""
    if value is None:
        return None
    try:
        return parser(value)
    except ValueError as exc:
        fail(f"{flag}: {exc}")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def build_overrides(
    *,
    target: str | None,
    duration: str | None,
    warmup: str | None,
    interval: str | None,
    connections: int | None,
    rate: str | None,
    processes: int | None,
    opt: list[str] | None,
    serve_opt: list[str] | None,
    ramp_to: str | None = None,
    timeout: str | None = None,
    threshold: list[str] | None = None,
    pacing_precision: str | None = None,
    clock: str | None = None,
) -> Overrides:
    """The plan overrides of the run flags (shared by ``run`` and ``sweep``); bad ones exit 2."""
    from protobench.engine.plan import Overrides  # noqa: PLC0415 - pydantic: not for --help

    return Overrides(
        target=target,
        duration=parse_value(duration, parse_duration, "--duration"),
        warmup=parse_value(warmup, parse_duration, "--warmup"),
        interval=parse_value(interval, parse_duration, "--interval"),
        connections=connections,
        rate=parse_value(rate, parse_rate, "--rate"),
        ramp_to=parse_value(ramp_to, parse_rate, "--ramp-to"),
        processes=processes,
        timeout=parse_value(timeout, parse_duration, "--timeout"),
        pacing_precision=parse_value(pacing_precision, parse_duration, "--pacing-precision"),
        clock=clock,
        thresholds=tuple(threshold or ()),
        options=parse_pairs(opt or [], "--opt"),
        serve=parse_pairs(serve_opt or [], "--serve-opt"),
    )
