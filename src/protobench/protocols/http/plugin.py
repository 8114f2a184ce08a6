"""The ``http`` protocol plugin: HTTP/1.1 keep-alive requests on the lean client, or HTTP/2.

One op, ``request``: every session holds one keep-alive connection and sends
the same pre-encoded request (method, path, headers, body) back-to-back
(:mod:`.sessions`). With ``version = "2"`` (or ``"h2c"``) the request goes
over HTTP/2 (:mod:`.h2`): ``streams`` sessions share one connection, each with
one stream in flight, and a group's ``count`` is its connections
(:meth:`HttpProtocol.connection_share`); each session names the protocol it
got (the report's ``protocols``: ``h2``, ``h2c``, ``http/1.1``). A response
with an expected status (``expect_status``, default any 2xx) is a success;
any other status is a ``protocol`` error whose code is the status (``"503"``).
The options and the op's parameters are in
:mod:`.options`; the client is :mod:`.client`.

The request target is the target URL's path exactly as given
(``http://host/big.bin`` requests ``/big.bin``), or a group's ``path``
resolved against it by RFC 3986 (:func:`~protobench.protocols.http.client.join_path`).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from protobench.protocols.base import ProtocolPlugin, Session, SessionContext, StrictModel
from protobench.protocols.http.client import (
    SUCCESS,
    Endpoint,
    HttpConnection,
    build_request,
    check_relative_path,
    join_path,
    make_ssl_context,
    parse_url,
)
from protobench.protocols.http.flags import connect_target
from protobench.protocols.http.h2.opening import ALPN
from protobench.protocols.http.options import (
    HttpOptions,
    RequestParams,
    connection_share,
    read_headers,
)
from protobench.protocols.http.sessions import HTTP1, HeadSession, HttpSession, open_h2_session
from protobench.tlsutil import split_url_files
from protobench.vocab.counters import CONNECTS
from protobench.vocab.errors import ErrorClass, OpError


@cache
def _ssl_context(
    insecure: bool,
    ca_file: str | None,
    cert_file: str | None,
    key_file: str | None,
    alpn: tuple[str, ...] = ("http/1.1",),
) -> ssl.SSLContext:
    return make_ssl_context(insecure, ca_file, cert_file, key_file, alpn)


class HttpProtocol(ProtocolPlugin):
    """HTTP/1.1 keep-alive load: one op, ``request``."""

    name: ClassVar[str] = "http"
    description: ClassVar[str] = "HTTP/1.1 keep-alive requests (any method, headers, body, TLS)"
    options: ClassVar[type[StrictModel]] = HttpOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = {"request": RequestParams}
    embedded_target: ClassVar[str | None] = "http"
    url_schemes: ClassVar[tuple[str, ...]] = ("http", "https")
    counts_connects: ClassVar[bool] = True

    def connection_share(
        self, op: str, params: Mapping[str, Any], options: Mapping[str, Any], target: str | None
    ) -> int:
        del op
        return connection_share(params, options, target)

    def check_target(self, url: str) -> None:
        parse_url(url)
        check_relative_path(urlsplit(url).path)  # requested as given: it must be sendable

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}
        self._headers: dict[str, list[tuple[str, str]]] = {}

    def _file_headers(self, params: RequestParams) -> list[tuple[str, str]]:
        """The headers of ``headers_file`` (read once per worker), then the ``headers`` table's."""
        named = list(params.headers.items())
        if params.headers_file is None:
            return named
        headers = self._headers.get(params.headers_file)
        if headers is None:
            try:
                headers = read_headers(params.headers_file)
            except ValueError as exc:
                raise OpError(ErrorClass.LOCAL, str(exc)) from None
            self._headers[params.headers_file] = headers
        given = {name.lower() for name, _ in named}
        return [(n, v) for n, v in headers if n.lower() not in given] + named

    def _body(self, params: RequestParams) -> bytes:
        if params.body is not None:
            return params.body.encode("utf-8")
        if params.body_file is None:
            return b""
        body = self._bodies.get(params.body_file)
        if body is None:
            try:
                body = Path(params.body_file).read_bytes()
            except OSError as exc:
                raise OpError(
                    ErrorClass.LOCAL, f"cannot read body_file {params.body_file!r}: {exc}"
                ) from None
            self._bodies[params.body_file] = body
        return body

    async def open_session(self, ctx: SessionContext) -> Session:
        options, params = ctx.options, ctx.params
        assert isinstance(options, HttpOptions)
        assert isinstance(params, RequestParams)
        url, files = split_url_files(ctx.target)  # an embedded target's CA, in its fragment
        try:
            endpoint: Endpoint = parse_url(url)
        except ValueError as exc:
            raise OpError(ErrorClass.CONNECT, str(exc)) from None
        h2 = options.version != "1.1"
        ca_file = options.ca_file or files.get("ca_file")
        tls = None
        if endpoint.tls:
            try:
                tls = _ssl_context(
                    options.insecure,
                    ca_file,
                    options.cert_file,
                    options.key_file,
                    ALPN if h2 else ("http/1.1",),
                )
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise OpError(ErrorClass.LOCAL, f"TLS setup failed: {exc}") from None
        if options.connect_to is not None:
            endpoint = connect_via(endpoint, options.connect_to)
        target = join_path(urlsplit(url).path, params.path)
        headers = self._file_headers(params)
        accept = SUCCESS if params.expect_status is None else frozenset(params.expect_status)
        conn: HttpConnection | None = None
        if h2:
            got = await open_h2_session(
                ctx, endpoint, target, headers, self._body(params), accept, tls, options.fallback
            )
            if not isinstance(got, HttpConnection | None):
                return got
            conn = got  # the server chose HTTP/1.1 (ALPN) and the fallback is allowed
            if conn is not None:
                conn.max_head = options.max_header_size
            tls = _ssl_context(options.insecure, ca_file, options.cert_file, options.key_file)
        if not options.keepalive and not any(n.lower() == "connection" for n, _ in headers):
            headers.append(("Connection", "close"))
        request = build_request(
            params.method, endpoint, target, headers, self._body(params), under_base=False
        )
        if conn is None:
            conn = await HttpConnection.connect(
                endpoint,
                ssl=tls,
                timeout=ctx.timeout,
                stamps=ctx.stamps,
                reactor=ctx.reactor,
                max_head=options.max_header_size,
            )
            ctx.count(CONNECTS, 1)
        kind = HeadSession if params.method == "HEAD" else HttpSession
        session = kind(conn, request, accept, tls, ctx.count, ctx.sent, options.keepalive)
        if h2:
            session.negotiated = HTTP1
        return session


def connect_via(endpoint: Endpoint, connect_to: str) -> Endpoint:
    """``endpoint`` connected at ``connect_to``'s address when it names the endpoint's host and
    port (or any), as curl's and oha's ``--connect-to``."""
    url_host, url_port, host, port = connect_target(connect_to)
    if url_host not in (None, endpoint.host) or url_port not in (None, endpoint.port):
        return endpoint
    return replace(endpoint, via=(host, port))
