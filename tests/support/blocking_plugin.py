"""A protocol plugin that blocks its worker's event loop, as a plugin with a bug does.

``blocking-http`` is the HTTP plugin whose worker 0, once its first session is open,
blocks its own event loop after ``PROTOBENCH_TEST_BLOCK_AFTER`` seconds: in a blocking
call (``sleep``, the default) or busy running Python (``spin``,
``PROTOBENCH_TEST_BLOCK_HOW``), for :data:`BLOCK_FOR` seconds at most (the watchdog
kills it long before). :func:`installed` makes it a plugin of the processes started
with its environment (an entry point in a ``.dist-info`` on ``PYTHONPATH``), so a
real run, its workers included, loads it the way it loads any plugin.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import ClassVar

from protobench.protocols.base import Session, SessionContext
from protobench.protocols.http.plugin import HttpProtocol

NAME = "blocking-http"
AFTER_ENV = "PROTOBENCH_TEST_BLOCK_AFTER"
HOW_ENV = "PROTOBENCH_TEST_BLOCK_HOW"
BLOCK_FOR = 60.0
"""Seconds the loop stays blocked at most: the test ends by itself even if nothing kills it."""
REPO = Path(__file__).resolve().parents[2]


def _block(how: str) -> None:
    end = time.monotonic() + BLOCK_FOR
    if how == "sleep":
        time.sleep(BLOCK_FOR)
    while time.monotonic() < end:  # spin: busy in Python, never yielding
        pass


class BlockingHttp(HttpProtocol):
    """HTTP, with worker 0's loop blocked a while after its first session opened."""

    name: ClassVar[str] = NAME
    _armed = False

    async def open_session(self, ctx: SessionContext) -> Session:
        session = await super().open_session(ctx)
        if ctx.worker == 0 and not BlockingHttp._armed:
            BlockingHttp._armed = True
            after = float(os.environ.get(AFTER_ENV, "1"))
            how = os.environ.get(HOW_ENV, "sleep")
            asyncio.get_running_loop().call_later(after, _block, how)
        return session


def installed(directory: Path, after: float, how: str = "sleep") -> dict[str, str]:
    """The environment of processes that have the plugin (written into ``directory``)."""
    info = directory / "blocking_plugin-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: blocking-plugin\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        f"[protobench.protocols]\n{NAME} = {__name__}:{BlockingHttp.__name__}\n"
    )
    entries = (str(directory), str(REPO), os.environ.get("PYTHONPATH"))
    path = os.pathsep.join(entry for entry in entries if entry)
    return {"PYTHONPATH": path, AFTER_ENV: str(after), HOW_ENV: how}
