"""``protobench schema report|event|snapshot|diff|profile``: print a published JSON Schema.

The schemas are generated from the typed models (:mod:`protobench.snapshots.schemas`),
each with an ``$id`` naming its version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.common import fail
from protobench.snapshots.schemas import NAMES, json_schema
from protobench.termtext import echo


def schema_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help=f"Which schema: {', '.join(NAMES)}.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write it to this file.")
    ] = None,
) -> None:
    """Print a published JSON Schema: report, NDJSON event, snapshot, diff --json, profile.

    \b
    Examples:
      protobench schema report
      protobench schema diff
      protobench schema profile -o protobench-profile.schema.json

    \b
    Exit codes: 0 printed, 2 bad input (an unknown name, a file that cannot be written).
    """
    if name not in NAMES:
        fail(f"unknown schema {name!r} (expected one of {', '.join(NAMES)})")
    text = json.dumps(json_schema(name), indent=2) + "\n"
    if output is None:
        echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{output}: cannot write the schema ({exc.strerror or exc})")


def register(app: typer.Typer) -> None:
    app.command("schema")(schema_command)
