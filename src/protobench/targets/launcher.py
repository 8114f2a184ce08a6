"""Starting an embedded target as a child process for a run, and stopping it.

The child is ``python -m protobench.targets.serve NAME --host 127.0.0.1
--port 0 --announce`` plus the ``[serve]`` options (the same as ``protobench
serve``, without loading the CLI); its first stdout line is the JSON
:class:`Announcement`. It is spawned at once and awaited later
(:meth:`StartingTarget.ready`), so the worker processes start meanwhile.
Its output goes to ``target.log`` in the run's log directory. A target that
exits or stays silent is a :class:`TargetError` with the tail of that log.
"""

from __future__ import annotations

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
from protobench.targets.base import Announcement

START_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0


class TargetError(Exception):
    """The embedded target could not be started."""


def serve_command(name: str, options: dict[str, Any]) -> list[str]:
    command = [sys.executable, "-m", "protobench.targets.serve", name]
    command += ["--host", "127.0.0.1", "--port", "0", "--announce"]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            command.append(flag)
        elif value is False:
            command.append("--no-" + key.replace("_", "-"))
        else:
            command += [flag, value if isinstance(value, str) else json.dumps(value)]
    return command


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
            serve_command(name, options),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
    try:
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
