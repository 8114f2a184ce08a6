"""Test helpers: embedded targets in their own process or in the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from protobench.protocols.base import StrictModel
from protobench.targets.base import Announcement, EmbeddedTarget
from tests.support.timing import S


@dataclass
class ServedProcess:
    """``protobench serve NAME`` in its own process."""

    url: str
    process: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def get_json(self, path: str) -> Any:
        """``GET path`` on the target's own port, over plain HTTP, decoded."""
        base = self.url.split("#", 1)[0].split("://", 1)[1].split("/", 1)[0]
        with urllib.request.urlopen(f"http://{base}/{path.lstrip('/')}", timeout=5) as reply:
            return json.loads(reply.read())

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@contextmanager
def served(name: str, *flags: str) -> Iterator[ServedProcess]:
    """Start ``protobench serve NAME --port 0 --announce FLAGS``; stop it afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", "serve", name, "--port", "0", "--announce", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"serve {name} did not start (exit code {process.wait(10)})")
        yield ServedProcess(json.loads(line)["url"], process)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@contextlib.asynccontextmanager
async def running(
    target: EmbeddedTarget, options: StrictModel, start_timeout: float = 60 * S
) -> AsyncIterator[str]:
    """``target`` serving on 127.0.0.1 (a free port) in this event loop; yields its URL."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[Announcement] = loop.create_future()
    task = asyncio.ensure_future(target.serve("127.0.0.1", 0, options, ready.set_result))
    await asyncio.wait({ready, task}, timeout=start_timeout, return_when=asyncio.FIRST_COMPLETED)
    try:
        if not ready.done():
            raise RuntimeError(f"the {target.name} target did not start")
        yield ready.result().url
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
