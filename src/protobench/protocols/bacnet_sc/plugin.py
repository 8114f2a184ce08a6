"""The ``bacnet-sc`` protocol plugin: ops ``unicast`` and ``broadcast`` through an SC hub."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from protobench.protocols.bacnet_sc.client import Link, open_link
from protobench.protocols.bacnet_sc.options import BacnetScOptions, BroadcastParams, UnicastParams
from protobench.protocols.bacnet_sc.sessions import BroadcastSession, UnicastSession
from protobench.protocols.base import ProtocolPlugin, Session, SessionContext, StrictModel
from protobench.protocols.payloads import TaggedPayloads
from protobench.protocols.sharing import ConnectionShare


class BacnetScProtocol(ProtocolPlugin):
    """BACnet/SC NPDU echo load through a hub, every echo verified byte for byte."""

    name: ClassVar[str] = "bacnet-sc"
    description: ClassVar[str] = (
        "BACnet Secure Connect: NPDU echo through a hub (unicast, broadcast), mutual TLS 1.3"
    )
    options: ClassVar[type[StrictModel]] = BacnetScOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = {
        "unicast": UnicastParams,
        "broadcast": BroadcastParams,
    }
    embedded_target: ClassVar[str | None] = "bacnet-sc"
    url_schemes: ClassVar[tuple[str, ...]] = ("wss", "ws")
    secret_options: ClassVar[frozenset[str]] = frozenset({"key_password"})

    async def open_session(self, ctx: SessionContext) -> Session:
        options = ctx.options
        params = ctx.params
        assert isinstance(options, BacnetScOptions)
        assert isinstance(params, UnicastParams | BroadcastParams)
        prefix = params.prefix.encode()

        async def opener() -> Link:
            return await open_link(ctx.target, options, prefix, ctx.timeout)

        if params.inflight > 1:
            share = ConnectionShare[Link].of(
                ("bacnet-sc", ctx.target, ctx.group), params.inflight, _alive
            )
            link, release = await share.acquire(opener)
        else:
            link, release = await opener(), _last
        payloads = TaggedPayloads(ctx.index, params.payload, "binary")
        if isinstance(params, UnicastParams):
            nodes = [bytes.fromhex(node.replace(":", "")) for node in params.nodes]
            return UnicastSession(link, release, payloads, nodes, ctx.timeout, ctx.sent, ctx.stamps)
        return BroadcastSession(
            link, release, payloads, params.echoes, ctx.timeout, ctx.sent, ctx.stamps
        )


def _alive(link: Link) -> bool:
    return link.alive


def _last() -> bool:
    """The release of an unshared link: its only session is the last."""
    return True
