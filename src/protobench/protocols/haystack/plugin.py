"""The ``haystack`` protocol plugin: Project Haystack over HTTP and WebSocket.

A session logs in with SCRAM-SHA-256 (:mod:`.scram`) and pre-encodes its op's
requests when it opens (:mod:`.sessions.opening`); each exchange is then one
request on the fast path (:mod:`.sessions.http`, :mod:`.sessions.ws`). The
options and each op's parameters are in :mod:`.options`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from protobench.protocols.base import ProtocolPlugin, Session, SessionContext, StrictModel
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
