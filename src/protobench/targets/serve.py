"""Running an embedded target in the foreground: ``protobench serve NAME``.

Options arrive as ``{"delay": "5ms"}`` (from ``--delay 5ms`` flags or a profile's
``[serve]`` table) and are validated by the target's own model. Only loopback
addresses may be bound. With ``announce`` the :class:`Announcement` is printed
as one JSON line on stdout (how a run learns the URL and PID of the target it
started); otherwise a human line goes to stderr. With ``--options-stdin`` the
option flags are read as one JSON list from stdin (how a run passes them, so no
secret is on the command line), and the process dies with its parent
(:mod:`protobench.lifeline`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import asdict
from typing import Any

import uvloop
from pydantic import ValidationError

from protobench.hostutil import is_loopback_host
from protobench.lifeline import die_with_parent
from protobench.protocols.base import StrictModel
from protobench.protocols.registry import PluginError
from protobench.targets import registry
from protobench.targets.base import Announcement, EmbeddedTarget, ServeError


def parse_options(target: EmbeddedTarget, values: dict[str, Any]) -> StrictModel:
    try:
        return target.options.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"]) or "?"
        message = "unknown option" if error["type"] == "extra_forbidden" else error["msg"]
        raise ServeError(f"serve {target.name}: --{key.replace('_', '-')}: {message}") from None


def parse_flags(args: list[str]) -> dict[str, Any]:
    """``["--delay", "5ms", "--no-tls", "--tls=false"]`` -> options (``_`` for ``-``)."""
    values: dict[str, Any] = {}
    position = 0
    while position < len(args):
        arg = args[position]
        if not arg.startswith("--"):
            raise ServeError(f"unexpected argument {arg!r}: target options are --name value")
        name, eq, value = arg[2:].partition("=")
        key = name.replace("-", "_")
        if eq:
            values[key] = value
        elif position + 1 < len(args) and not args[position + 1].startswith("--"):
            values[key] = args[position + 1]
            position += 1
        elif key.startswith("no_"):
            values[key[3:]] = False
        else:
            values[key] = True
        position += 1
    return values


def read_flags(text: str) -> list[str]:
    """Option flags given as one JSON list of strings (``--options-stdin``)."""
    try:
        flags = json.loads(text or "[]")
    except ValueError as exc:
        raise ServeError(f"options on stdin: not JSON ({exc})") from None
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise ServeError("options on stdin: expected a JSON list of strings")
    return flags


def serve(name: str, host: str, port: int, values: dict[str, Any], announce: bool) -> None:
    """Serve the target until SIGINT/SIGTERM."""
    if not is_loopback_host(host):
        raise ServeError(f"serve {name}: only loopback addresses may be bound, not {host!r}")
    target = registry.load(name)
    options = parse_options(target, values)

    def ready(announcement: Announcement) -> None:
        if announce:
            print(json.dumps(asdict(announcement)), flush=True)
        else:
            print(
                f"serving {name} ({announcement.kind}) on {announcement.url}, pid "
                f"{announcement.pid}; Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await target.serve(host, port, options, ready)

    uvloop.run(main())


def main(argv: list[str] | None = None) -> int:
    """``python -m protobench.targets.serve NAME [--host H] [--port P] [--announce] [OPTIONS]``.

    What runs start for their embedded target: the same as ``protobench serve``
    without loading the CLI (Typer, Rich and every command), so it starts sooner.
    """
    die_with_parent()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print(
            "usage: python -m protobench.targets.serve NAME [--host H] [--port P] [--announce]"
            " [--options-stdin] [OPTIONS]",
            file=sys.stderr,
        )
        return 2
    name, rest = args[0], args[1:]
    host, port, announce, options, from_stdin = "127.0.0.1", 0, False, [], False
    position = 0
    while position < len(rest):
        arg = rest[position]
        if arg in ("--host", "--port") and position + 1 < len(rest):
            if arg == "--host":
                host = rest[position + 1]
            else:
                port = int(rest[position + 1])
            position += 2
        elif arg == "--announce":
            announce = True
            position += 1
        elif arg == "--options-stdin":
            from_stdin = True
            position += 1
        else:
            options.append(arg)
            position += 1
    try:
        if from_stdin:
            options += read_flags(sys.stdin.read())
        serve(name, host, port, parse_flags(options), announce)
    except (ServeError, PluginError) as exc:
        print(f"protobench: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
