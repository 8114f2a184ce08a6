"""Helpers of the Beckn tests: the mock BPP in this event loop, contexts, its counters."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from protobench.protocols.base import SessionContext
from protobench.protocols.beckn.models import OPERATIONS, BecknOptions
from protobench.targets.base import Announcement
from protobench.targets.beckn import BecknBppOptions, BecknBppTarget
from protobench.targets.http import STATS_PATH

SPEC_PRIVATE_KEY = (
    "lP3sHA+9gileOkXYJXh4Jg8tK0gEEMbf9yCPnFpbldhrAY+NErqL9WD+Vav7TE5tyVXGXBle9ONZi2W7o144eQ=="
)
SPEC_PUBLIC_KEY = "awGPjRK6i/Vg/lWr+0xObclVxlwZXvTjWYtlu6NeOHk="
"""The key pair of the Beckn signing spec's worked example (published, not a secret)."""


@contextlib.asynccontextmanager
async def bpp_server(**options: Any) -> AsyncIterator[str]:
    """The mock BPP on 127.0.0.1 (free port) in this loop; yields its URL."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[Announcement] = loop.create_future()
    serve = BecknBppTarget().serve("127.0.0.1", 0, BecknBppOptions(**options), ready.set_result)
    task = asyncio.ensure_future(serve)
    await asyncio.wait({ready, task}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    try:
        if not ready.done():
            raise RuntimeError("the mock BPP did not start")
        yield ready.result().url
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def bpp_stats(url: str) -> dict[str, int]:
    """The mock BPP's counters."""
    async with httpx.AsyncClient() as client:
        reply = await client.get(url + STATS_PATH)
    stats: dict[str, int] = reply.json()
    return stats


def beckn_context(
    url: str, op: str, index: int = 0, params: dict[str, Any] | None = None, **options: Any
) -> SessionContext:
    """A session context for ``op`` (default options: the onix dev key)."""
    return SessionContext(
        target=url,
        group=op,
        op=op,
        index=index,
        worker=0,
        params=OPERATIONS[op](**(params or {})),
        options=BecknOptions(**options),
        timeout=5.0,
    )
