"""Helpers shared by the CLI commands: error printing, key=value flags, JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

from protobench.engine.report import EXIT_BAD_INPUT


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print an error on stderr and exit with ``code``."""
    typer.echo(f"protobench: error: {message}", err=True)
    raise typer.Exit(code)


def parse_pairs(pairs: list[str], flag: str) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values parsed as JSON when they are)."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or not key.strip():
            fail(f"{flag} {pair!r}: expected KEY=VALUE")
        try:
            values[key.strip()] = json.loads(raw)
        except ValueError:
            values[key.strip()] = raw
    return values


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()
