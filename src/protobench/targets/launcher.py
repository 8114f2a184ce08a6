"""Starting an embedded target as a child process for a run, and stopping it.

The child is ``python -m protobench.targets.serve NAME --host 127.0.0.1
--port 0 --announce --options-stdin`` (the same as ``protobench serve``,
without loading the CLI). The ``[serve]`` options, as the flags ``protobench
serve`` takes, go to its stdin as one JSON list, never on its command line,
where any local user could read a password (``ps``). Its first stdout line
is the JSON :class:`Announcement`. It dies with the run's process
(:mod:`protobench.lifeline`), even one killed with SIGKILL. It is spawned
at once and awaited later (:meth:`StartingTarget.ready`), so the worker
processes start meanwhile.
Its output goes to ``target.log`` in the run's log directory. A target that
exits or stays silent is a :class:`TargetError` with the tail of that log.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from protobench.hostutil import tail
from protobench.lifeline import child_env
from protobench.targets.base import Announcement
from protobench.vocab.exceptions import Incomplete

START_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0


class TargetError(Incomplete):
    """The embedded target could not be started."""


def serve_flags(options: dict[str, Any]) -> list[str]:
    """``{"delay": "5ms", "tls": False}`` -> ``["--delay", "5ms", "--no-tls"]``."""
    flags: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append("--no-" + key.replace("_", "-"))
        else:
            flags += [flag, value if isinstance(value, str) else json.dumps(value)]
    return flags


def serve_command(name: str) -> list[str]:
    """The target's command line; its options are written to its stdin (:func:`embedded_target`)."""
    return [
        *(sys.executable, "-m", "protobench.targets.serve", name),
        *("--host", "127.0.0.1", "--port", "0", "--announce", "--options-stdin"),
    ]


class StartingTarget:
    """A target being started: :meth:`ready` waits for its announcement."""

    def __init__(self, name: str, process: Process | None, log_path: Path | None) -> None:
        self.name = name
        self.process = process
        self.log_path = log_path
        self._announcement: Announcement | None = None

    @classmethod
    def external(cls, announcement: Announcement) -> StartingTarget:
        target = cls(announcement.url, None, None)
        target._announcement = announcement
        return target

    async def ready(self) -> Announcement:
        if self._announcement is None:
            assert self.process is not None
            assert self.log_path is not None
            self._announcement = await _read_announcement(self.process, self.log_path, self.name)
        return self._announcement


@asynccontextmanager
async def embedded_target(
    name: str, options: dict[str, Any], log_path: Path
) -> AsyncIterator[StartingTarget]:
    """Spawn the target (without waiting for it), yield it, stop it on exit."""
    with log_path.open("ab") as log:
        process = await anyio.open_process(
            serve_command(name),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            env=child_env(),
        )
    try:
        assert process.stdin is not None
        with contextlib.suppress(anyio.BrokenResourceError, OSError):
            await process.stdin.send(json.dumps(serve_flags(options)).encode())
            await process.stdin.aclose()
        yield StartingTarget(name, process, log_path)
    finally:
        await stop_process(process)


async def _read_announcement(process: Process, log_path: Path, name: str) -> Announcement:
    assert process.stdout is not None
    buffer = b""
    with anyio.move_on_after(START_TIMEOUT):
        async for chunk in process.stdout:
            buffer += chunk
            if b"\n" in buffer:
                line = buffer.split(b"\n", 1)[0]
                try:
                    data = json.loads(line)
                    return Announcement(data["url"], data["kind"], int(data["pid"]))
                except (ValueError, KeyError) as exc:
                    raise TargetError(f"embedded target {name!r} said {line!r}") from exc
    raise TargetError(
        f"embedded target {name!r} did not start (exit code {process.returncode}):\n"
        + tail(log_path)
    )


async def stop_process(process: Process) -> None:
    """Terminate, then kill after a grace period."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(STOP_TIMEOUT):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
