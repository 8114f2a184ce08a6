"""Helpers of the Beckn tests: the mock BPP in this event loop, contexts, its counters."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from protobench.protocols.base import SessionContext
from protobench.protocols.beckn.options import OPERATIONS, BecknOptions
from protobench.targets.beckn import BecknBppOptions, BecknBppTarget
from protobench.targets.http import STATS_PATH
from tests.support.targets import running
from tests.support.timing import S

SPEC_PRIVATE_KEY = (
    "lP3sHA+9gileOkXYJXh4Jg8tK0gEEMbf9yCPnFpbldhrAY+NErqL9WD+Vav7TE5tyVXGXBle9ONZi2W7o144eQ=="
)
SPEC_PUBLIC_KEY = "awGPjRK6i/Vg/lWr+0xObclVxlwZXvTjWYtlu6NeOHk="
"""The key pair of the Beckn signing spec's worked example (published, not a secret)."""


def bpp_server(**options: Any) -> contextlib.AbstractAsyncContextManager[str]:
    """The mock BPP in this loop; yields its URL."""
    return running(BecknBppTarget(), BecknBppOptions(**options), start_timeout=30 * S)


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
