"""Beckn v2 request bodies: ``{"context": Context, "message": ...}`` built fast.

The context carries ``action``, ``bapId``, ``bapUri`` (our callback URL),
``messageId`` and ``transactionId`` (UUIDs), ``timestamp`` (RFC 3339, UTC),
``version`` ("2.0.0") and ``ttl``; select, init and confirm add ``bppId`` and
``bppUri``. The messages are synthetic but shaped like real traffic: discover
sends an intent with a text search; select/init/confirm send an order (one
provider, items, a delivery fulfillment, payment terms; init adds billing and
the customer; confirm adds the payment amount).

:class:`BodyFactory` serialises each body once as a template with ``%s`` slots
for the three values that change per request, so a request costs two UUIDs, a
timestamp and a bytes ``%`` format. With ``reuse_ids`` the whole body is fixed
(the "cache warm" case of the seed benchmark).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections.abc import Iterator
from typing import Any, Final

import orjson

ACTIONS: Final = ("discover", "select", "init", "confirm")
VERSION = "2.0.0"
_SLOTS = ("messageId", "timestamp", "transactionId")
_MARK = "\x00slot\x00"
_RNG = random.Random(os.urandom(16))
_VERSION_4 = (0x4000 << 64) | (0x8000 << 48)
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))
_second = [-1, ""]


def uuid4() -> str:
    """A random (version 4, RFC 4122 variant) UUID string, without a syscall.

    Message and transaction ids must be unique, not unpredictable: a PRNG
    seeded from ``os.urandom`` per process does that at a third of the cost
    of :func:`uuid.uuid4`.
    """
    h = f"{(_RNG.getrandbits(128) & _VERSION_MASK) | _VERSION_4:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def timestamp() -> str:
    """Now, RFC 3339 in UTC with milliseconds (``2025-01-15T09:17:55.971Z``)."""
    now = time.time()
    second = int(now)
    if second != _second[0]:
        _second[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))]
    return f"{_second[1]}{int((now - second) * 1000):03d}Z"


def message(action: str, query: str = "pizza") -> dict[str, Any]:
    """The ``message`` of a request for ``action``."""
    if action == "discover":
        return {"intent": {"textSearch": query}}
    order: dict[str, Any] = {
        "provider": {"id": "pb-provider-1"},
        "items": [
            {"id": "pb-item-1", "quantity": {"selected": {"count": 2}}},
            {"id": "pb-item-7", "quantity": {"selected": {"count": 1}}},
        ],
        "fulfillments": [
            {
                "id": "pb-fulfillment-1",
                "type": "Delivery",
                "stops": [
                    {
                        "type": "end",
                        "location": {"gps": "12.9716,77.5946", "area_code": "560001"},
                        "contact": {"phone": "9886098860", "email": "buyer@example.org"},
                    }
                ],
            }
        ],
        "payments": [{"type": "ON-FULFILLMENT"}],
    }
    if action in ("init", "confirm"):
        order["billing"] = {
            "name": "Asha Rao",
            "address": "12 Residency Road",
            "city": {"name": "Bengaluru"},
            "state": {"name": "Karnataka"},
            "country": {"code": "IND"},
            "area_code": "560025",
            "email": "buyer@example.org",
            "phone": "9886098860",
        }
        order["fulfillments"][0]["customer"] = {
            "person": {"name": "Asha Rao"},
            "contact": {"phone": "9886098860", "email": "buyer@example.org"},
        }
    if action == "confirm":
        order["payments"][0]["params"] = {"amount": "150.00", "currency": "INR"}
    return {"order": order}


def context(
    action: str,
    bap_id: str,
    bap_uri: str,
    bpp_id: str,
    bpp_uri: str,
    message_id: str,
    stamp: str,
    transaction_id: str,
) -> dict[str, Any]:
    """A v2 ``Context`` for ``action``."""
    ctx: dict[str, Any] = {
        "action": action,
        "bapId": bap_id,
        "bapUri": bap_uri,
        "messageId": message_id,
        "timestamp": stamp,
        "transactionId": transaction_id,
        "version": VERSION,
        "ttl": "PT30S",
    }
    if action != "discover":
        ctx["bppId"] = bpp_id
        ctx["bppUri"] = bpp_uri
    return ctx


class BodyFactory:
    """Bodies for one action, with fresh ids per call unless ``reuse_ids``."""

    __slots__ = ("_fixed", "_templates", "message_id")

    def __init__(
        self,
        action: str,
        *,
        bap_id: str,
        bap_uri: str,
        bpp_id: str,
        bpp_uri: str,
        queries: list[str],
        reuse_ids: bool = False,
        start: int = 0,
    ) -> None:
        queries = queries if action == "discover" and queries else ["pizza"]
        rotated = queries[start % len(queries) :] + queries[: start % len(queries)]
        if reuse_ids:
            ids = (uuid4(), timestamp(), uuid4())
            self.message_id = ids[0]
            body = self._encode(action, bap_id, bap_uri, bpp_id, bpp_uri, rotated[0], ids)
            self._fixed: bytes | None = body
            self._templates: Iterator[bytes] = itertools.repeat(body)
            return
        self._fixed = None
        self.message_id = ""
        self._templates = itertools.cycle(
            [
                self._encode(action, bap_id, bap_uri, bpp_id, bpp_uri, query, (_MARK,) * 3)
                .replace(b"%", b"%%")
                .replace(_MARK.encode().replace(b"\x00", b"\\u0000"), b"%s")
                for query in rotated
            ]
        )

    @staticmethod
    def _encode(
        action: str,
        bap_id: str,
        bap_uri: str,
        bpp_id: str,
        bpp_uri: str,
        query: str,
        slots: tuple[str, str, str],
    ) -> bytes:
        ctx = context(action, bap_id, bap_uri, bpp_id, bpp_uri, *slots)
        return orjson.dumps({"context": ctx, "message": message(action, query)})

    def __call__(self) -> bytes:
        """The next body; its ``messageId`` is then :attr:`message_id`."""
        template = next(self._templates)
        if self._fixed is not None:
            return template
        self.message_id = message_id = uuid4()
        return template % (message_id.encode(), timestamp().encode(), uuid4().encode())
