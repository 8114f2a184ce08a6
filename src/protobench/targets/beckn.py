"""Embedded mock Beckn BPP: verifies every signature, validates the context, ACKs.

``protobench serve beckn-bpp`` answers ``POST /{action}`` for ``discover``,
``select``, ``init`` and ``confirm`` (the target URL is the BPP's base URL):

1. the ``Authorization`` signature is verified against the one registered
   subscriber key (``--subscriber-id``, ``--key-id``, ``--public-key``;
   default: beckn-onix's sandbox development key), with ``created``/``expires``
   checked within ``--skew`` seconds. Failure: **401** ``NACK`` naming the
   reason, and a ``WWW-Authenticate: Signature`` challenge;
2. the body must be JSON with a v2 ``context`` (``action`` equal to the path,
   ``bapId``, ``bapUri``, ``messageId``, ``transactionId``, ``timestamp``,
   ``version``) and a ``message``. Failure: **400** ``NACK``;
3. otherwise **200** ``{"status": "ACK"}``.

With ``--callback-delay`` the BPP also plays the asynchronous half: that long
after each ACK it POSTs ``on_{action}`` (same ``transactionId`` and
``messageId``, a small catalog or order in ``message``) to the request's
``bapUri``, signed with the BPP's key (default: the same development key,
as subscriber ``--bpp-id``).

Keep-alive connections idle for ``--idle-timeout`` (60 s) are closed.
``GET /__protobench__/stats`` returns the counters (``served``, ``ack``,
``unauthorized``, ``bad_request``, ``callbacks``, ``callback_errors``) so
tests can check a generator's counts against the server's. It runs on the
serve process's uvloop, one asyncio protocol with httptools parsing.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, ClassVar

import orjson
from pydantic import Field

from protobench.protocols.base import StrictModel
from protobench.protocols.beckn.callbacks import CallbackSender
from protobench.protocols.beckn.keys import (
    DEV_KEY_ID,
    DEV_PRIVATE_KEY,
    DEV_PUBLIC_KEY,
    DEV_SUBSCRIBER_ID,
    private_key,
    public_key,
)
from protobench.protocols.beckn.payloads import ACTIONS, VERSION
from protobench.protocols.beckn.server import HandlerProtocol, json_response
from protobench.protocols.beckn.signing import SignatureError, Signer, verify
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.targets.delays import DelayLine
from protobench.targets.http import STATS_PATH
from protobench.vocab.fields import Duration

_STATS_URL = STATS_PATH.encode("ascii")
_REQUIRED = ("action", "bapId", "bapUri", "messageId", "transactionId", "timestamp", "version")
_PATHS = {f"/{action}".encode(): action for action in ACTIONS}
_ACK = json_response("200 OK", {"status": "ACK"})


class BecknBppOptions(StrictModel):
    """Options of ``protobench serve beckn-bpp`` (and of a profile's ``[serve]`` table)."""

    subscriber_id: str = Field(default=DEV_SUBSCRIBER_ID, description="accepted BAP subscriber")
    key_id: str = Field(default=DEV_KEY_ID, description="accepted BAP key id")
    public_key: str = Field(default=DEV_PUBLIC_KEY, description="BAP public key (base64)")
    skew: int = Field(default=5, ge=0, le=300, description="clock skew allowed, seconds")
    bpp_id: str = Field(default="bpp.protobench.local", description="this BPP's subscriber id")
    callback_delay: Duration | None = Field(
        default=None, description="send on_{action} callbacks this long after the ACK"
    )
    idle_timeout: Duration = Field(
        default=60.0, gt=0, le=3600, description="close keep-alive connections idle this long"
    )


def _nack(status: str, code: str, message: str, extra: str = "") -> bytes:
    error = {"code": code, "message": message}
    return json_response(status, {"status": "NACK", "error": error}, extra)


class _BppState:
    """What every connection of the server shares: keys, counters, the callback sender."""

    def __init__(
        self, options: BecknBppOptions, sender: CallbackSender | None, delays: DelayLine
    ) -> None:
        self.options = options
        self.delays = delays
        self.keys = {(options.subscriber_id, options.key_id): public_key(options.public_key)}
        self.challenge = (
            f'WWW-Authenticate: Signature realm="{options.bpp_id}",'
            'headers="(created) (expires) digest"\r\n'
        )
        self.sender = sender
        self.counts: Counter[str] = Counter()

    def handle(self, method: bytes, url: bytes, authorization: str, body: bytes) -> bytes:
        if url == _STATS_URL and method == b"GET":
            return json_response("200 OK", self.stats())
        action = _PATHS.get(url.split(b"?", 1)[0])
        if action is None or method != b"POST":
            self.counts["bad_request"] += 1
            return _nack("404 Not Found", "404", "no such Beckn endpoint")
        try:
            verify(authorization, body, self.keys, skew=self.options.skew)
        except SignatureError as exc:
            self.counts["unauthorized"] += 1
            return _nack("401 Unauthorized", "401", str(exc), self.challenge)
        problem, request = _check_body(action, body)
        if problem:
            self.counts["bad_request"] += 1
            return _nack("400 Bad Request", "400", problem)
        self.counts["ack"] += 1
        if self.sender is not None and self.options.callback_delay is not None:
            due = time.monotonic_ns() + round(self.options.callback_delay * 1e9)
            self.delays.call_at(due, self.sender.send, request)
        return _ACK

    def stats(self) -> dict[str, int]:
        stats = {"served": self.counts.total(), **self.counts}
        if self.sender is not None:
            stats.update(callbacks=self.sender.sent, callback_errors=self.sender.failed)
        return stats


def _check_body(action: str, body: bytes) -> tuple[str, dict[str, Any]]:
    """``("", request)`` for a valid v2 request of ``action``, else ``(problem, {})``."""
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "body is not JSON", {}
    context = request.get("context") if isinstance(request, dict) else None
    if not isinstance(context, dict) or "message" not in request:
        return "body needs context and message", {}
    missing = [key for key in _REQUIRED if not context.get(key)]
    if missing:
        return f"context lacks {', '.join(missing)}", {}
    if context["action"] != action:
        return f"context.action {context['action']!r} is not {action!r}", {}
    if not str(context["version"]).startswith(VERSION.rsplit(".", 1)[0]):
        return f"unsupported version {context['version']!r}", {}
    return "", request


class BecknBppTarget(EmbeddedTarget):
    """A mock Beckn BPP that verifies signatures (401 on a bad one) and ACKs."""

    name: ClassVar[str] = "beckn-bpp"
    description: ClassVar[str] = "mock Beckn v2 BPP: signature check, context check, ACK"
    options: ClassVar[type[StrictModel]] = BecknBppOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, BecknBppOptions)
        loop = asyncio.get_running_loop()
        sender = None
        if options.callback_delay is not None:
            signer = Signer(options.bpp_id, DEV_KEY_ID, private_key(DEV_PRIVATE_KEY))
            sender = CallbackSender(signer, options.bpp_id)
        delays = DelayLine(loop)
        state = _BppState(options, sender, delays)
        server = await loop.create_server(
            lambda: HandlerProtocol(state.handle, options.idle_timeout), host, port
        )
        try:
            bound = server.sockets[0].getsockname()
            url_host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            ready(Announcement(f"http://{url_host}:{bound[1]}", "protobench mock Beckn BPP"))
            await server.serve_forever()
        finally:
            server.close()
            delays.close()
            if sender is not None:
                sender.close()
