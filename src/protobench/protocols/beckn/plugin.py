"""The ``beckn`` protocol plugin: a BAP sending signed Beckn v2 requests.

Ops ``discover``, ``select``, ``init`` and ``confirm`` each POST
``{target}/{action}`` with a v2 body (:mod:`.payloads`) signed per the Beckn
HTTP signature spec (:mod:`.signing`); the target is the BPP's base URL (the
embedded ``beckn-bpp`` by default). The private key is a secret option
(``private_key``, else ``$BECKN_PRIVATE_KEY``, else beckn-onix's public
*development* key). A session loads the key and builds its body templates
when it opens; each exchange then costs one body, one digest, one Ed25519
signature and one request on the lean HTTP client (:mod:`.sessions`).
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Mapping
from functools import cache
from typing import ClassVar

from protobench.protocols.base import ProtocolPlugin, Session, SessionContext, StrictModel
from protobench.protocols.beckn import callbacks
from protobench.protocols.beckn.keys import (
    KeyFormatError,
    private_key,
    public_key,
    resolve_private_key,
)
from protobench.protocols.beckn.options import (
    OPERATIONS,
    ActionParams,
    BecknOptions,
    DiscoverParams,
)
from protobench.protocols.beckn.payloads import BodyFactory
from protobench.protocols.beckn.sessions import BecknSession
from protobench.protocols.beckn.signing import Signer
from protobench.protocols.http.client import HttpConnection, make_ssl_context, parse_url
from protobench.vocab.errors import ErrorClass, OpError


class BecknProtocol(ProtocolPlugin):
    """Beckn v2 BAP -> BPP requests, Ed25519-signed, with optional callback correlation."""

    name: ClassVar[str] = "beckn"
    description: ClassVar[str] = (
        "Beckn v2 BAP requests (discover/select/init/confirm), Ed25519 + BLAKE2b-512 signed"
    )
    options: ClassVar[type[StrictModel]] = BecknOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = OPERATIONS
    embedded_target: ClassVar[str | None] = "beckn-bpp"
    url_schemes: ClassVar[tuple[str, ...]] = ("http", "https")
    secret_options: ClassVar[frozenset[str]] = frozenset({"private_key"})

    async def open_session(self, ctx: SessionContext) -> Session:
        options = ctx.options
        params = ctx.params
        assert isinstance(options, BecknOptions)
        assert isinstance(params, ActionParams)
        try:
            endpoint = parse_url(ctx.target)
        except ValueError as exc:
            raise OpError(ErrorClass.CONNECT, str(exc)) from None
        signer = _signer(options) if options.sign else None
        listener = await callbacks.listener(signer) if params.await_callback else None
        bodies = BodyFactory(
            ctx.op,
            bap_id=options.bap_id or options.subscriber_id,
            bap_uri=listener.url if listener is not None else options.bap_uri,
            bpp_id=options.bpp_id,
            bpp_uri=options.bpp_uri or endpoint.url.rstrip("/"),
            queries=params.queries if isinstance(params, DiscoverParams) else [],
            reuse_ids=params.reuse_ids,
            start=ctx.index,
        )
        ssl = _ssl_context(options.insecure, options.ca_file) if endpoint.tls else None
        conn = await HttpConnection.connect(
            endpoint, ssl=ssl, timeout=ctx.timeout, stamps=ctx.stamps, reactor=ctx.reactor
        )
        conn.sent = ctx.sent
        bpp_key = public_key(options.bpp_public_key) if options.bpp_public_key else None
        return BecknSession(
            conn, endpoint, ctx.op, bodies, signer, ctx.timeout, listener, ssl, bpp_key
        )


def _signer(options: BecknOptions) -> Signer:
    try:
        key = private_key(resolve_private_key(options.private_key, options.private_key_env))
    except KeyFormatError as exc:
        raise OpError(ErrorClass.LOCAL, str(exc)) from None
    return Signer(options.subscriber_id, options.key_id, key, options.signature_ttl)


@cache
def _ssl_context(insecure: bool, ca_file: str | None) -> ssl_module.SSLContext:
    return make_ssl_context(insecure=insecure, ca_file=ca_file)
