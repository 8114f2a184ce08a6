"""The ``haystack`` protocol plugin: Project Haystack over HTTP and WebSocket.

A session logs in with SCRAM-SHA-256 (:mod:`.scram`) and pre-encodes its op's
requests when it opens (:mod:`.sessions.opening`); each exchange is then one
request on the fast path (:mod:`.sessions.http`, :mod:`.sessions.ws`). The
options and each op's parameters are in :mod:`.options`. ``protobench discover
haystack URL`` asks a server what it has (:meth:`discover`: :mod:`.discover`) and
fits a profile to it (:mod:`.fit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from protobench.protocols.base import (
    DiscoverRequest,
    Discovery,
    ProtocolPlugin,
    Session,
    SessionContext,
    StrictModel,
)
from protobench.protocols.haystack.discover import discover as read_server
from protobench.protocols.haystack.fit import fitted_profile, summary
from protobench.protocols.haystack.options import OPERATIONS, HaystackOptions
from protobench.protocols.haystack.sessions.opening import open_session


class HaystackProtocol(ProtocolPlugin):
    """Project Haystack: SCRAM login, then grids over HTTP (JSON/Zinc) or WebSocket."""

    name: ClassVar[str] = "haystack"
    description: ClassVar[str] = (
        "Project Haystack over HTTP (JSON or Zinc) and WebSocket, SCRAM-SHA-256 login"
    )
    options: ClassVar[type[StrictModel]] = HaystackOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = OPERATIONS
    embedded_target: ClassVar[str | None] = "haystack"
    url_schemes: ClassVar[tuple[str, ...]] = ("http", "https")
    secret_options: ClassVar[frozenset[str]] = frozenset({"password"})

    async def open_session(self, ctx: SessionContext) -> Session:
        return await open_session(ctx)

    async def discover(self, request: DiscoverRequest) -> Discovery:
        options = request.options
        assert isinstance(options, HaystackOptions)
        info = await read_server(request.url, options, request.timeout)
        given = set(options.model_fields_set)
        return Discovery(summary(info), fitted_profile(info, request.profile_name, options, given))
