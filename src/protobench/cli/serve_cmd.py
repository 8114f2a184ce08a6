"""``protobench serve NAME``: run an embedded target in the foreground.

``serve NAME --help`` lists that target's own options (``--delay DURATION``...)
after the command's, read from the target's options model (:class:`ServeCommand`).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

import typer
import typer.core

from protobench.cli.common import fail
from protobench.protocols.registry import PluginError
from protobench.targets import registry
from protobench.vocab.exceptions import ExitCode


def serve_command(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Target: " + ", ".join(registry.names()))
    ],
    host: Annotated[
        str, typer.Option(metavar="ADDRESS", help="Loopback address to bind.")
    ] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(
            min=0, max=65535, metavar="PORT", help="Port (default: the target's own; 0: any)."
        ),
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


def _placeholder(name: str, annotation: Any, metadata: list[Any]) -> str:
    """The placeholder of a target option: ``DURATION``, ``RATE``, ``N``, ``json|zinc``..."""
    from protobench.vocab.units import parse_duration, parse_rate  # noqa: PLC0415

    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        (inner,) = (arg for arg in args if arg is not type(None))
        return _placeholder(name, inner, metadata)
    if typing.get_origin(annotation) is typing.Annotated:
        return _placeholder(name, args[0], [*metadata, *annotation.__metadata__])
    parsers = {getattr(step, "func", None) for step in metadata}
    if typing.get_origin(annotation) is typing.Literal:
        return "|".join(str(arg) for arg in args)
    if parse_duration in parsers:
        return "DURATION"
    if parse_rate in parsers:
        return "RATE"
    if annotation is int:
        return "N"
    if annotation is float:
        return "NUMBER"
    return "FILE" if name.endswith("_file") else "TEXT"


def _row(key: str, field: Any, secret: bool) -> tuple[str, str]:
    """One target option as ``serve NAME --help`` shows it: its flag, its help and default."""
    flag = "--" + key.replace("_", "-")
    if field.annotation is bool:
        shown: str | None = flag.removeprefix("--") if field.default else f"no-{flag[2:]}"
        flag = f"{flag} / --no-{flag[2:]}"
    else:
        placeholder = _placeholder(key, field.annotation, list(field.metadata))
        flag = f"{flag} {placeholder}"
        unit = {"DURATION": "s", "RATE": "/s"}.get(placeholder)
        shown = None if field.default is None else str(field.default)
        if unit and field.default is not None:
            shown = f"{field.default:g}{unit}"
    about = field.description or ""
    if shown is not None and not secret:
        about = f"{about}  [default: {shown}]".strip()
    return flag, about


def target_options(name: str) -> list[tuple[str, str]]:
    """The rows of ``serve NAME --help`` for the target's own options: flag, help."""
    target = registry.load(name)
    return [
        _row(key, field, key in target.secret_options)
        for key, field in target.options.model_fields.items()
    ]


class ServeCommand(typer.core.TyperCommand):
    """``serve``, whose help lists the options of the target named before ``--help``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        named = [arg for arg in args if not arg.startswith("-")]
        if named and named[0] in registry.names():
            ctx.meta["serve_target"] = named[0]
        return super().parse_args(ctx, args)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        super().format_options(ctx, formatter)
        name = ctx.meta.get("serve_target")
        if name is None:
            formatter.write_paragraph()
            formatter.write_text("Each target's own options: protobench serve NAME --help.")
            return
        try:
            rows = target_options(name)
        except PluginError as exc:  # a missing extra: say so where the options would be
            formatter.write_paragraph()
            formatter.write_text(str(exc))
            return
        with formatter.section(f"Options of the {name} target"):
            formatter.write_dl(rows)


def register(app: typer.Typer) -> None:
    app.command(
        "serve",
        cls=ServeCommand,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(serve_command)
