"""The ``websocket`` protocol plugin: ops ``echo``, ``send`` and ``subscribe``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from protobench.protocols.base import ProtocolPlugin, Session, SessionContext, StrictModel
from protobench.protocols.payloads import TaggedPayloads
from protobench.protocols.websocket.client import connect
from protobench.protocols.websocket.options import (
    EchoParams,
    SendParams,
    SubscribeParams,
    WebSocketOptions,
)
from protobench.protocols.websocket.sessions import EchoSession, SendSession, SubscribeSession


class WebSocketProtocol(ProtocolPlugin):
    """WebSocket client load: verified echo round trips, fire-and-forget sends, pushes."""

    name: ClassVar[str] = "websocket"
    description: ClassVar[str] = (
        "WebSocket (RFC 6455): echo round trips verified byte for byte, sends, server pushes"
    )
    options: ClassVar[type[StrictModel]] = WebSocketOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = {
        "echo": EchoParams,
        "send": SendParams,
        "subscribe": SubscribeParams,
    }
    embedded_target: ClassVar[str | None] = "ws"
    url_schemes: ClassVar[tuple[str, ...]] = ("ws", "wss")
    secret_options: ClassVar[frozenset[str]] = frozenset({"key_password"})

    async def open_session(self, ctx: SessionContext) -> Session:
        options = ctx.options
        assert isinstance(options, WebSocketOptions)
        params = ctx.params
        path = params.path if isinstance(params, SubscribeParams) else None
        conn = await connect(
            ctx.target,
            options,
            ctx.timeout,
            path,
            ctx.index,
            stamps=ctx.stamps,
            reactor=ctx.reactor,
        )
        if isinstance(params, SubscribeParams):
            return SubscribeSession(conn, params.message, params.stamped, ctx.stamps)
        assert isinstance(params, EchoParams)
        payloads = TaggedPayloads(ctx.index, params.payload, params.mode)
        if isinstance(params, SendParams):
            return SendSession(conn, payloads, params.rate)
        return EchoSession(conn, payloads, ctx.timeout, ctx.sent, ctx.stamps)
