"""``protobench serve NAME``: run an embedded target in the foreground."""

from __future__ import annotations

from typing import Annotated

import typer

from protobench.cli.common import fail
from protobench.protocols.registry import PluginError
from protobench.targets import registry
from protobench.vocab.exceptions import ExitCode


def serve_command(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Target: " + ", ".join(registry.names()))],
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Port (default: the target's own; 0: any)."),
    ] = None,
    announce: Annotated[
        bool, typer.Option(help="Print the announcement as one JSON line (for runs).")
    ] = False,
) -> None:
    """Serve an embedded target; its own options follow as --name value.

    \b
    Examples:
      protobench serve http --delay 5ms --port 8080
      protobench serve mqtt --port 1883
      protobench serve bacnet-ip           (needs the bacnet extra)

    \b
    Exit codes: 0 stopped (Ctrl-C), 2 bad input (unknown target or option,
    a missing extra), 3 it could not start (port in use...).
    """
    from protobench.targets.base import ServeError  # noqa: PLC0415 - pydantic, uvloop
    from protobench.targets.serve import parse_flags, serve  # noqa: PLC0415

    try:
        target = registry.load(name)
        chosen = target.default_port if port is None else port
        serve(name, host, chosen, parse_flags(list(ctx.args)), announce)
    except (ServeError, PluginError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"serve {name}: {exc.strerror or exc}", code=ExitCode.INCOMPLETE)


def register(app: typer.Typer) -> None:
    app.command(
        "serve",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(serve_command)
