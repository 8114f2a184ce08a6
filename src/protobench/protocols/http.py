"""The ``http`` protocol plugin: HTTP/1.1 keep-alive requests on the lean client.

One op, ``request``: every session holds one keep-alive connection and sends
the same pre-encoded request (method, path, headers, body) back-to-back.
A response with an expected status (``expect_status``, default any 2xx) is a
success; any other status is a ``protocol`` error whose code is the status
(``"503"``). Sessions are :class:`CallbackSession`\\ s on
:meth:`HttpConnection.submit`: the parser's completion callback reports the
exchange, with no task, future or timer per request.

The request target is the target URL's path exactly as given
(``http://host/big.bin`` requests ``/big.bin``), or a group's ``path``
resolved against it by RFC 3986 (:func:`~protobench.protocols.http_client.join_path`).

A connection that the server closed between requests (``Connection: close``,
HTTP/1.0, a body delimited by the close, an idle timeout) or that was dropped
after a timeout is reopened by the session on its next request; the connect
time then counts in that request's latency and a failure to connect is
reported as that request's error. Each such reopening adds one to the op's
``connects`` counter (the engine counts the session's first connection).

Options: ``insecure`` (skip TLS verification), ``ca_file``, ``cert_file`` and
``key_file`` (mutual TLS), ``secret_headers`` (header names whose values are
never stored or printed, in addition to names that look like credentials),
``max_header_size`` (the longest response head, 64 KiB by default; a longer one
is a ``protocol`` error and the connection is closed).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Mapping
from functools import cache, partial
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from protobench.protocols.base import CallbackSession, Done, Protocol, SessionContext, StrictModel
from protobench.protocols.http_client import (
    MAX_HEAD,
    SUCCESS,
    Endpoint,
    HttpConnection,
    Response,
    build_request,
    check_relative_path,
    check_request,
    join_path,
    make_ssl_context,
    parse_url,
    status_error,
)
from protobench.vocab.counters import CONNECTS
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.fields import Size
from protobench.vocab.recorder import Tally


class HttpOptions(StrictModel):
    """Protocol-wide options of ``http`` (the profile's ``[options]`` table)."""

    insecure: bool = Field(default=False, description="skip TLS certificate verification")
    ca_file: str | None = Field(default=None, description="PEM file of CAs to trust")
    cert_file: str | None = Field(default=None, description="client certificate (PEM)")
    key_file: str | None = Field(default=None, description="client certificate's key (PEM)")
    secret_headers: list[str] = Field(
        default_factory=list,
        description="more headers whose values are never stored or printed",
    )
    max_header_size: Size = Field(
        default=MAX_HEAD,
        ge=1,
        description="the longest response head (a longer one is a protocol error)",
    )

    @model_validator(mode="after")
    def _key_needs_cert(self) -> HttpOptions:
        if self.key_file and not self.cert_file:
            raise ValueError("key_file needs cert_file")
        return self


class RequestParams(StrictModel):
    """Parameters of the ``request`` op (the keys of a ``[[group]]``)."""

    method: str = Field(default="GET", description="HTTP method")
    path: str | None = Field(
        default=None,
        description="path (and query) resolved against the target URL's path (RFC 3986);"
        " unset: the target URL's path as given",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="request headers")
    body: str | None = Field(default=None, description="request body (UTF-8)")
    body_file: str | None = Field(default=None, description="file whose bytes are the body")
    expect_status: list[int] | None = Field(
        default=None, description="statuses that count as success (default: any 2xx)"
    )

    @field_validator("method")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("expect_status")
    @classmethod
    def _statuses(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError("expected at least one status, or no expect_status for any 2xx")
            bad = [s for s in value if not 100 <= s <= 599]
            if bad:
                raise ValueError(f"expected HTTP statuses between 100 and 599, got {bad}")
        return value

    @field_validator("body_file")
    @classmethod
    def _file_exists(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).is_file():
            raise ValueError(f"body_file {value!r} is not a readable file")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RequestParams:
        if self.body is not None and self.body_file is not None:
            raise ValueError("give body or body_file, not both")
        if self.path:
            check_relative_path(self.path)
        check_request(self.method, "/", self.headers)
        return self


@cache
def _ssl_context(
    insecure: bool, ca_file: str | None, cert_file: str | None, key_file: str | None
) -> ssl.SSLContext:
    return make_ssl_context(insecure, ca_file, cert_file, key_file)


class HttpSession(CallbackSession):
    """One keep-alive connection sending one pre-encoded request back-to-back.

    ``submit`` is bound straight to the connection's ``submit`` with the
    request (a ``functools.partial``, no Python frame of its own); a submit on
    a connection that died goes to :meth:`_reopen` through ``on_dead``.
    ``count`` adds to the op's counters (``connects``: one per reopened connection);
    every connection it binds counts the requests it writes in ``sent``.
    """

    def __init__(
        self,
        conn: HttpConnection,
        request: bytes,
        accept: frozenset[int],
        tls: ssl.SSLContext | None,
        count: Callable[[str, int], None],
        sent: Tally,
    ) -> None:
        self._request = request
        self._sent = sent
        self._accept = accept
        self._tls = tls
        self._count = count
        self._reopening: asyncio.Task[None] | None = None
        self._conn = self._bind(conn)

    def _bind(self, conn: HttpConnection) -> HttpConnection:
        conn.accept = self._accept
        conn.sent = self._sent
        conn.on_dead = self._reopen
        self.submit = partial(conn.submit, self._request)  # type: ignore[method-assign]
        return conn

    def submit(self, done: Done) -> None:
        self._conn.submit(self._request, done)

    def _start(self, conn: HttpConnection, done: Done) -> None:
        conn.submit(self._request, done)

    def _reopen(self, request: bytes, done: Done) -> None:
        """Reconnect in the background, then start the exchange (or report the failure)."""
        self._reopening = asyncio.get_running_loop().create_task(self._reconnect(done))

    async def _reconnect(self, done: Done) -> None:
        old = self._conn
        try:
            conn = await HttpConnection.connect(
                old.endpoint, ssl=self._tls, timeout=old.timeout, max_head=old.max_head
            )
        except OpError as exc:
            done(exc, 0)
            return
        self._count(CONNECTS, 1)
        self._conn = self._bind(conn)
        self._start(conn, done)

    async def close(self) -> None:
        if self._reopening is not None and not self._reopening.done():
            self._reopening.cancel()
        self._conn.close()


class HeadSession(HttpSession):
    """A session of HEAD requests: their responses have no body, so they take the full path."""

    def _bind(self, conn: HttpConnection) -> HttpConnection:
        conn.accept = self._accept
        conn.sent = self._sent
        return conn

    def submit(self, done: Done) -> None:
        conn = self._conn
        if conn.alive:
            self._start(conn, done)
        else:
            self._reopen(self._request, done)

    def _start(self, conn: HttpConnection, done: Done) -> None:
        accept = self._accept

        def on_response(error: OpError | None, response: Response | None) -> None:
            if error is not None:
                done(error, 0)
            elif response is not None and response.status in accept:
                done(None, response.nbytes)
            elif response is not None:
                done(status_error(response.status), response.nbytes)

        conn.send(self._request, on_response)


class HttpProtocol(Protocol):
    """HTTP/1.1 keep-alive load: one op, ``request``."""

    name: ClassVar[str] = "http"
    description: ClassVar[str] = "HTTP/1.1 keep-alive requests (any method, headers, body, TLS)"
    options: ClassVar[type[StrictModel]] = HttpOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = {"request": RequestParams}
    embedded_target: ClassVar[str | None] = "http"
    url_schemes: ClassVar[tuple[str, ...]] = ("http", "https")

    def check_target(self, url: str) -> None:
        parse_url(url)
        check_relative_path(urlsplit(url).path)  # requested as given: it must be sendable

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}

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

    async def open_session(self, ctx: SessionContext) -> HttpSession:
        options, params = ctx.options, ctx.params
        assert isinstance(options, HttpOptions)
        assert isinstance(params, RequestParams)
        try:
            endpoint: Endpoint = parse_url(ctx.target)
        except ValueError as exc:
            raise OpError(ErrorClass.CONNECT, str(exc)) from None
        tls = None
        if endpoint.tls:
            try:
                tls = _ssl_context(
                    options.insecure, options.ca_file, options.cert_file, options.key_file
                )
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise OpError(ErrorClass.LOCAL, f"TLS setup failed: {exc}") from None
        target = join_path(urlsplit(ctx.target).path, params.path)
        request = build_request(
            params.method, endpoint, target, params.headers, self._body(params), under_base=False
        )
        accept = SUCCESS if params.expect_status is None else frozenset(params.expect_status)
        conn = await HttpConnection.connect(
            endpoint, ssl=tls, timeout=ctx.timeout, max_head=options.max_header_size
        )
        kind = HeadSession if params.method == "HEAD" else HttpSession
        return kind(conn, request, accept, tls, ctx.count, ctx.sent)
