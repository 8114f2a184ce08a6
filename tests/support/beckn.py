"""Helpers of the Beckn tests: the mock BPP in this event loop, contexts, its counters."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

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


def onix_ack_signature(
    body: bytes,
    request_authorization: str,
    seed_b64: str,
    subscriber_id: str,
    key_id: str,
    created: int,
    ttl: int = 300,
) -> str:
    """The ``Signature`` header beckn-onix v1.8.2 puts on an ACK, made here step by step
    as its ``signAck`` step does (written from its algorithm, sharing no code with ours):
    the request's ``signature="..."`` value (after ``,signature="``) becomes a fourth
    line of the signing string when there is one, the header list is always the
    four names, and the header value starts with the ``Signature`` scheme word."""
    digest = base64.standard_b64encode(hashlib.blake2b(body, digest_size=64).digest()).decode()
    lines = [f"(created): {created}", f"(expires): {created + ttl}", f"digest: BLAKE-512={digest}"]
    bound = re.search(r',signature="([^"]*)"', request_authorization)
    if bound is not None and bound.group(1):
        lines.append(f"request-signature: {bound.group(1)}")
    seed = base64.standard_b64decode(seed_b64)[:32]
    signature = Ed25519PrivateKey.from_private_bytes(seed).sign("\n".join(lines).encode())
    return (
        f'Signature keyId="{subscriber_id}|{key_id}|ed25519",algorithm="ed25519",'
        f'created="{created}",expires="{created + ttl}",'
        'headers="(created) (expires) digest request-signature",'
        f'signature="{base64.standard_b64encode(signature).decode()}"'
    )
