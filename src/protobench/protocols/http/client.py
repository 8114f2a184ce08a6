"""A lean keep-alive HTTP/1.1 client connection: asyncio protocol + httptools (llhttp).

This is the hot path of the ``http`` plugin and the transport that other
HTTP-based plugins (Haystack, Beckn) reuse. One :class:`HttpConnection` is one
TCP (or TLS) connection with at most one request in flight:

* requests are pre-encoded once with :func:`build_request` and written with a
  single ``transport.write`` per exchange;
* responses are parsed by one ``httptools.HttpResponseParser`` per connection,
  reused for every response;
* :meth:`HttpConnection.submit` is the benchmark path: no headers, no body,
  no response object, no task or future - the parser's ``on_message_complete``
  calls ``done(error_or_None, bytes_received)`` directly;
* on that path a read whose bytes equal the last read that held exactly one
  whole keep-alive response (from one message boundary to the next) is
  completed without feeding the parser again: the same bytes from the same
  parser state give the same result, and servers of benchmarks send the same
  response bytes again and again (nginx's only change is its ``Date`` header,
  once a second). Any other read goes through llhttp;
* :meth:`HttpConnection.send` and :meth:`HttpConnection.fetch` deliver a
  :class:`Response` (status, lowercased headers, optionally the body) for
  control paths and async sessions;
* with a :class:`~protobench.protocols.timestamps.reactor.Reactor` (the kernel's
  clock) the connection is a socket of ours read with ``recvmsg``
  (:class:`~protobench.protocols.timestamps.transport.StampedTransport`): the
  kernel's receive stamp of the packet that completed a response is in the
  session's :class:`~protobench.protocols.timestamps.clock.Stamps` when the
  completion callback runs, and each request's send is stamped (the kernel's
  transmit stamp, or the time just before the send syscall); TLS connections,
  and every connection without a reactor, use the loop's transports and stamp
  the send in user space;
* the request timeout uses one loop timer per connection, re-armed lazily:
  it fires at the deadline of the request that armed it and, if a later
  request is in flight, moves to that request's deadline;
* a response whose body ends when the server closes the connection (no
  ``Content-Length``, not chunked: RFC 9112 section 6.3, rule 8; HTTP/1.0
  servers send these) is complete at the end of the stream. On the submit path
  llhttp's headers are not kept, so the read that began the response (and any
  more reads until its head ended) is kept and its head parsed again at EOF to
  tell a close-delimited body from a truncated one.

Memory is bounded whatever the server sends: a response head (status line and
headers) longer than the connection's ``max_head`` (default 64 KiB, as h11 and
nginx) and, on the :meth:`HttpConnection.send` path that keeps bodies, a body
longer than ``max_body`` (default 64 MiB; refused as soon as its
``Content-Length`` says so) are ``protocol`` errors (``header block over 64 KiB``,
``response body over 64 MiB``) that close the connection. The head is checked
by the parser callbacks (the bytes of an unfinished head are counted as they
arrive, so an endless head is refused at the limit); the submit path keeps no
body at all.

Errors are mapped here and nowhere else (see :mod:`protobench.protocols.base`):
``ECONNREFUSED`` is ``refused``, a connect that does not finish in time or a
reply that does not come in time is ``timeout``, a TLS or certificate failure
and any other socket error while connecting is ``connect``, a peer that closes
or resets an established connection with a request in flight is ``closed``,
and an unparsable response is ``protocol``. After a timeout or a parse error
the connection is closed (its state is unknown); :attr:`HttpConnection.alive`
tells whether it can take another request. A response that ends the
connection (``Connection: close``, HTTP/1.0, a close-delimited body) completes
normally and leaves the connection not :attr:`~HttpConnection.alive`: the
caller opens a new one for its next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl as ssl_module
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import cast
from urllib.parse import urljoin, urlsplit

import httptools

from protobench.protocols.base import Done
from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.protocols.timestamps.reactor import Reactor
from protobench.protocols.timestamps.transport import StampedTransport, open_stamped
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally
from protobench.vocab.units import format_size

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_HEAD = 64 * 1024
"""The longest response head (status line and headers) accepted by default, in bytes."""
MAX_BODY = 64 * 1024 * 1024
"""The longest response body :meth:`HttpConnection.send` keeps by default, in bytes."""
SUCCESS = frozenset(range(200, 300))
"""The statuses :meth:`HttpConnection.submit` accepts by default (any 2xx)."""

OnResponse = Callable[[OpError | None, "Response | None"], None]
"""Completion callback of :meth:`HttpConnection.send`: ``(error, None)`` or ``(None, response)``."""


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: ``scheme://host:port`` plus a path prefix (no trailing slash).

    ``via`` is the address connected to when it is not ``host:port`` (``connect_to``);
    the ``Host`` header and the TLS server name stay ``host``'s.
    """

    scheme: str
    host: str
    port: int
    base_path: str
    tls: bool
    via: tuple[str, int] | None = None

    @property
    def authority(self) -> str:
        """The ``Host`` header value: the port is omitted when it is the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The endpoint as a URL (for messages and reports)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}/"

    @property
    def address(self) -> tuple[str, int]:
        """The host and port connected to."""
        return self.via or (self.host, self.port)

    @property
    def where(self) -> str:
        """The endpoint for messages: its URL, and the address connected to when another."""
        if self.via is None:
            return self.url
        return f"{self.url} (at {self.via[0]}:{self.via[1]})"


def parse_url(url: str) -> Endpoint:
    """The :class:`Endpoint` of an ``http://`` or ``https://`` URL; ``ValueError`` otherwise."""
    if any(c < " " or c == "\x7f" for c in url):
        raise ValueError(f"bad URL {url!r}: control characters are not allowed")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"bad URL {url!r}: expected an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError(f"bad URL {url!r}: no host")
    if parts.query or parts.fragment:
        raise ValueError(
            f"bad URL {url!r}: put the query string in the request path, not the target"
        )
    if parts.username or parts.password:
        raise ValueError(
            f"bad URL {url!r}: credentials in URLs are not supported; use a header"
            " (-a USER:PASSWORD)"
        )
    return Endpoint(
        scheme=scheme,
        host=parts.hostname,
        port=port if port is not None else DEFAULT_PORTS[scheme],
        base_path=parts.path.rstrip("/"),
        tls=scheme == "https",
    )


def _check_token(kind: str, value: str) -> None:
    if not value or any(c in value for c in "\r\n\0 :\t") or not value.isascii():
        raise ValueError(f"bad HTTP {kind} {value!r}")


def check_request(
    method: str, path: str, headers: Mapping[str, str] | Iterable[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Validate a method, path and headers; return the headers as a list of pairs.

    Raises ``ValueError`` with a clear message on anything that would break
    the request's framing (line breaks, a path that is not absolute, a
    ``Content-Length`` or ``Transfer-Encoding`` header, which are computed).
    """
    _check_token("method", method)
    if not path.startswith("/") or any(c in path for c in " \r\n\0"):
        raise ValueError(f"bad HTTP path {path!r}: expected an absolute path such as '/api?x=1'")
    items = list(headers.items() if isinstance(headers, Mapping) else headers)
    for name, value in items:
        _check_token("header name", name)
        if any((c < " " and c != "\t") or c == "\x7f" for c in value):
            raise ValueError(
                f"bad value for HTTP header {name!r}: line breaks and control characters"
                " are not allowed"
            )
        if not value.isascii() and any(ord(c) > 255 for c in value):
            raise ValueError(f"bad value for HTTP header {name!r}: only Latin-1 characters")
        if name.lower() in ("content-length", "transfer-encoding"):
            raise ValueError(f"do not set {name}: the request's length is computed from its body")
    return items


def check_relative_path(path: str) -> None:
    """Raise ``ValueError`` unless ``path`` is a path reference :func:`join_path` can resolve."""
    if any(c <= " " or c == "\x7f" for c in path) or not path.isascii():
        raise ValueError(
            f"bad HTTP path {path!r}: spaces, control characters and non-ASCII are not allowed"
        )
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or path.startswith("//"):
        raise ValueError(
            f"bad HTTP path {path!r}: expected a path such as '/api?x=1' or 'items', not a URL"
        )
    if parts.fragment or "#" in path:
        raise ValueError(f"bad HTTP path {path!r}: a fragment is never sent")


def join_path(target_path: str, path: str | None) -> str:
    """The request target: the target URL's path, with ``path`` resolved against it.

    Without ``path`` (``None`` or ``""``) the target URL's path is requested
    exactly as given (``""`` is ``/``). Otherwise ``path`` is a URI reference
    resolved by RFC 3986 section 5.2, as browsers and ``urljoin`` do: ``/x``
    replaces the path, ``x`` replaces the last segment (after the last ``/``),
    ``?q=1`` keeps the path and sets the query, ``../x`` goes up a segment.
    """
    base = target_path or "/"
    if not path:
        return base
    joined = urljoin(base, path)
    return joined if joined.startswith("/") else "/" + joined


def build_request(
    method: str,
    endpoint: Endpoint,
    path: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes = b"",
    *,
    under_base: bool = True,
) -> bytes:
    """One HTTP/1.1 request, encoded once and written as is for every exchange.

    ``path`` is appended to the endpoint's base path (it may carry a query),
    or, with ``under_base=False``, is the request target itself (see
    :func:`join_path`). ``Host`` is added unless given; ``Content-Length`` is
    added when there is a body or the method usually carries one. Connections
    are persistent (HTTP/1.1's default), so no ``Connection`` header is sent
    unless given. Raises ``ValueError`` as :func:`check_request` does.
    """
    items = check_request(method, path, headers)
    prefix = endpoint.base_path if under_base else ""
    lines = [f"{method} {prefix}{path} HTTP/1.1"]
    if not any(name.lower() == "host" for name, _ in items):
        lines.append(f"Host: {endpoint.authority}")
    lines.extend(f"{name}: {value}" for name, value in items)
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body


def make_ssl_context(
    insecure: bool = False,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    alpn: tuple[str, ...] = ("http/1.1",),
) -> ssl_module.SSLContext:
    """A client TLS context: certificate and host name verification ON unless ``insecure``.

    ``ca_file`` adds trusted CAs (PEM); ``cert_file``/``key_file`` give a client
    certificate for mutual TLS. ALPN offers ``alpn`` (``http/1.1`` only by default;
    ``("h2", "http/1.1")`` for HTTP/2).
    """
    ctx = ssl_module.create_default_context(cafile=ca_file)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl_module.CERT_NONE
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file)
    elif key_file:
        raise ValueError("key_file needs cert_file")
    ctx.set_alpn_protocols(list(alpn))
    return ctx


@contextlib.contextmanager
def connect_errors(where: str, timeout: float) -> Iterator[None]:
    """Map what connecting to ``where`` (an endpoint's URL, and the address it was connected
    at when that is another) raised within ``timeout`` to an :class:`OpError`."""
    try:
        yield
    except TimeoutError:
        raise OpError(
            ErrorClass.TIMEOUT, f"connect to {where} took more than {timeout:g}s"
        ) from None
    except ConnectionRefusedError:
        raise OpError(ErrorClass.REFUSED, f"{where} refused the connection") from None
    except ssl_module.SSLCertVerificationError as exc:
        raise OpError(
            ErrorClass.CONNECT,
            f"TLS certificate verification failed for {where}: {exc.verify_message}"
            " (give ca_file, or insecure = true to skip verification)",
        ) from None
    except ssl_module.SSLError as exc:
        raise OpError(
            ErrorClass.CONNECT, f"TLS handshake with {where} failed: {exc.reason or exc}"
        ) from None
    except OSError as exc:
        raise OpError(ErrorClass.CONNECT, f"connect to {where}: {exc}") from None


class Response:
    """A parsed response. ``headers`` are ``(name, value)`` with names lowercased."""

    __slots__ = ("body", "headers", "nbytes", "reason", "status")

    def __init__(
        self, status: int, reason: str, headers: list[tuple[bytes, bytes]], body: bytes, nbytes: int
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.nbytes = nbytes

    def header(self, name: str) -> bytes | None:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        key = name.lower().encode("latin-1")
        for hname, value in self.headers:
            if hname == key:
                return value
        return None

    def __repr__(self) -> str:
        return f"Response({self.status} {self.reason}, {len(self.body)} body bytes)"


def status_error(status: int) -> OpError:
    """The ``protocol`` error of an unexpected status: code ``"503"``, detail its reason phrase."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "unexpected status"
    return OpError(ErrorClass.PROTOCOL, reason, code=str(status))


def body_ends_at_close(status: int, headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a response's body is delimited by the server closing (RFC 9112 section 6.3).

    ``headers`` have lowercased names. A 1xx, 204 or 304 response has no body;
    a ``Content-Length`` or a ``Transfer-Encoding`` ending in ``chunked``
    delimits it; any other response's body runs until the connection closes.
    """
    if status < 200 or status in (204, 304):
        return False
    for name, value in headers:
        if name == b"content-length":
            return False
        if name == b"transfer-encoding" and value.rstrip().lower().endswith(b"chunked"):
            return False
    return True


class _HeadReader:
    """Parser callbacks keeping the head of the last response begun in some bytes."""

    __slots__ = ("complete", "headers")

    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.complete = False

    def on_message_begin(self) -> None:
        self.headers = []
        self.complete = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self.complete = True


def _head_length(data: bytes) -> int:
    """The bytes of the head of the first final response in ``data`` (past any interim 1xx
    response), all of ``data`` from its start if that head has no end there."""
    start = 0
    while True:
        ends = [
            i + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (i := data.find(mark, start)) >= 0
        ]
        end = min(ends, default=len(data))
        if data[start + 9 : start + 10] != b"1" or end == len(data):
            return end - start
        start = end  # an interim response (1xx, no body): the final one follows


def close_delimited_status(data: bytes) -> int:
    """The status of the response begun in ``data`` if its body ends at close, else 0.

    ``data`` holds the bytes of a response from its first byte (possibly after
    interim 1xx responses) at least to the end of its head.
    """
    reader = _HeadReader()
    parser = httptools.HttpResponseParser(reader)
    try:
        parser.feed_data(data)
    except httptools.HttpParserError:
        return 0
    status = int(parser.get_status_code())
    return status if reader.complete and body_ends_at_close(status, reader.headers) else 0


class _Collector:
    """Parser callbacks of :meth:`HttpConnection.send`: status line, headers, body."""

    __slots__ = ("body", "body_size", "conn", "head_done", "headers", "keep_body", "reason")

    def __init__(self, conn: HttpConnection) -> None:
        self.conn = conn
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.body_size = 0
        self.keep_body = False
        self.head_done = False

    def on_message_begin(self) -> None:
        self.conn.on_message_begin()

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        conn = self.conn
        conn.on_headers_complete()
        self.head_done = True
        if self.keep_body:
            length = next((v for n, v in self.headers if n == b"content-length"), b"")
            if length.strip().isdigit() and int(length) > conn.max_body:
                raise conn.body_too_long()
        if conn._head:
            conn._head_complete()

    def on_body(self, body: bytes) -> None:
        if self.keep_body:
            self.body_size += len(body)
            if self.body_size > self.conn.max_body:
                raise self.conn.body_too_long()
            self.body.append(body)

    def on_message_complete(self) -> None:
        self.conn._complete_response()


class HttpConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request in flight at a time.

    Create it with :meth:`connect`. Use :meth:`submit` on the hot path and
    :meth:`send`/:meth:`fetch` when the response itself is needed. Callbacks
    run on the event loop, possibly from inside ``data_received``; a callback
    may start the next request on the same connection.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        endpoint: Endpoint,
        timeout: float,
        stamps: Stamps | None = None,
        reactor: Reactor | None = None,
        max_head: int = MAX_HEAD,
        max_body: int = MAX_BODY,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.stamps = stamps if stamps is not None else Stamps()
        """The times of the exchange in flight (the session's, shared with the engine)."""
        self.reactor = reactor
        """The reactor reading the connection with the kernel's clock (``None``: the loop's)."""
        self._write_request: Callable[[bytes], None] = self._stamp_and_write
        """Sends a request, its send stamped: a stamped transport's ``write_request``, or
        :meth:`_stamp_and_write` on the loop's transport."""
        self.accept = SUCCESS
        """Statuses :meth:`submit` reports as success; others are ``protocol`` errors."""
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._fast_parser = httptools.HttpResponseParser(self)
        self._parser = self._fast_parser
        self._collector: _Collector | None = None
        self._full_parser: httptools.HttpResponseParser | None = None
        self._done: Done | None = None
        self._on_response: OnResponse | None = None
        self._head = False
        self._nbytes = 0
        self._sent_at = 0.0
        self.sent = Tally()
        """The bytes of the requests written (a session sets its op's tally once open)."""
        self._timer: asyncio.TimerHandle | None = None
        self.alive = False
        """Whether the connection is open and in a known state (can take a request)."""
        self.on_dead: Callable[[bytes, Done], None] | None = None
        """Takes a :meth:`submit` made after the connection died (e.g. to reconnect)."""
        self._peer_error: str = ""
        self._in_message = False
        self._completed = 0
        self._last_status = 0
        self._repeat = b""
        self._repeat_status = 0
        self._message_head = b""
        self._head_done = False
        self.max_head = max_head
        """The longest response head accepted (bytes); a longer one is a ``protocol`` error."""
        self.max_body = max_body
        """The longest body :meth:`send` keeps (bytes); a longer one is a ``protocol`` error."""

    # -- opening and closing ------------------------------------------------

    @classmethod
    async def connect(
        cls,
        endpoint: Endpoint,
        *,
        ssl: ssl_module.SSLContext | None,
        timeout: float,  # noqa: ASYNC109 - also the connection's request timeout
        stamps: Stamps | None = None,
        reactor: Reactor | None = None,
        max_head: int = MAX_HEAD,
        max_body: int = MAX_BODY,
    ) -> HttpConnection:
        """Open a connection to ``endpoint``; raise :class:`OpError` on failure.

        ``ssl`` is required for ``https`` endpoints and ignored for ``http``.
        ``stamps`` are the session's (a new one's when not given); with a
        ``reactor`` a plain ``http`` connection reads the kernel's timestamps.
        ``max_head`` and ``max_body`` bound what a response may hold (bytes).
        """
        loop = asyncio.get_running_loop()
        if endpoint.tls and ssl is None:
            raise OpError(ErrorClass.CONNECT, f"{endpoint.url}: https needs an SSL context")
        tls = ssl if endpoint.tls else None
        host, port = endpoint.address
        times = stamps if stamps is not None else Stamps()

        def factory() -> HttpConnection:
            return cls(loop, endpoint, timeout, times, reactor, max_head, max_body)

        with connect_errors(endpoint.where, timeout):
            async with asyncio.timeout(timeout):
                if reactor is not None and tls is None:
                    _, made = await open_stamped(
                        factory,
                        host,
                        port,
                        reactor=reactor,
                        stamps=times,
                    )
                    conn = cast(HttpConnection, made)
                else:
                    _, conn = await loop.create_connection(
                        factory,
                        host,
                        port,
                        ssl=tls,
                        server_hostname=endpoint.host if tls is not None else None,
                    )
        return conn

    @property
    def busy(self) -> bool:
        """Whether a request is in flight."""
        return self._done is not None or self._on_response is not None

    def close(self) -> None:
        """Close the connection; a request in flight fails with ``closed``. Idempotent."""
        self.alive = False
        if self._transport is not None:
            self._transport.close()
        self._fail(OpError(ErrorClass.CLOSED, "connection closed by the client"))

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        if isinstance(transport, StampedTransport):
            self._write_request = transport.defer_request  # ``sent`` is read at completion
        self.alive = True
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if exc is not None:
            detail = f"connection reset by the peer ({exc})"
        else:
            self._end_of_stream()
            detail = self._peer_error or "connection closed by the peer"
        self._fail(OpError(ErrorClass.CLOSED, detail))

    def data_received(self, data: bytes) -> None:
        if data == self._repeat and not self._in_message and self._done is not None:
            nbytes = self._nbytes + len(data)
            self._nbytes = 0
            self._complete(self._repeat_status, nbytes)
            return
        self._nbytes += len(data)
        in_message = self._in_message
        if not in_message:
            self._message_head = data
        elif not self._head_done:
            if len(self._message_head) > self.max_head:  # an unfinished head, already too long
                self._protocol_failure(self.head_too_long().detail)
                return
            self._message_head += data
        parser = self._parser
        learn = not in_message and parser is self._fast_parser
        completed = self._completed
        try:
            parser.feed_data(data)
        except httptools.HttpParserError as exc:
            refused = exc.__context__  # a callback's own verdict (a limit), else llhttp's
            self._protocol_failure(
                refused.detail if isinstance(refused, OpError) else f"malformed response: {exc}"
            )
            return
        if (
            learn
            and self._completed == completed + 1
            and self._last_status >= 200
            and not self._in_message
            and self.alive
        ):
            self._repeat = data
            self._repeat_status = self._last_status

    def eof_received(self) -> bool | None:
        self._end_of_stream()
        return None

    def _end_of_stream(self) -> None:
        """The server closed its side: complete a response whose body ends here."""
        if self._done is not None:
            if not (self._in_message and self._head_done):
                return
            status = close_delimited_status(self._message_head)
            if status:
                self._in_message = False
                self._ended_by_close()
                nbytes, self._nbytes = self._nbytes, 0
                self._complete(status, nbytes)
        elif self._on_response is not None:
            collector = self._collector
            if (
                collector is not None
                and collector.head_done
                and body_ends_at_close(self._parser.get_status_code(), collector.headers)
            ):
                self._ended_by_close()
                self._complete_response()

    def _ended_by_close(self) -> None:
        self.alive = False
        self._peer_error = "the server closed the connection after a response"

    # -- the hot path -------------------------------------------------------

    def submit(self, request: bytes, done: Done) -> None:
        """Write ``request``; call ``done(None, nbytes)`` when its response is complete.

        A status outside :attr:`accept` calls ``done(OpError(protocol, code="503"),
        nbytes)``; a failure calls ``done(OpError(...), 0)``. The connection must
        not be :attr:`busy`; HEAD requests must use :meth:`send`. On a connection
        that is no longer :attr:`alive`, :attr:`on_dead` takes the request, or
        ``done`` gets a ``closed`` error (soon, not from inside this call).
        """
        if not self.alive:
            self._submit_dead(request, done)
            return
        self._done = done
        loop = self._loop
        self._sent_at = now = loop.time()
        if self._timer is None:
            self._timer = loop.call_at(now + self.timeout, self._on_timer)
        self._write_request(request)
        self.sent.n += len(request)

    def _stamp_and_write(self, request: bytes) -> None:
        """Send a request on the loop's transport, stamped just before (the user clock)."""
        self.stamps.sent = perf_ns()
        self._transport.write(request)  # type: ignore[union-attr]

    def _submit_dead(self, request: bytes, done: Done) -> None:
        if self.on_dead is not None:
            self.on_dead(request, done)
        else:
            error = OpError(ErrorClass.CLOSED, self._peer_error or "the connection is closed")
            self._loop.call_soon(done, error, 0)

    def on_message_begin(self) -> None:
        """Parser callback: a response starts."""
        self._in_message = True
        self._head_done = False

    def on_headers_complete(self) -> None:
        """Parser callback: the response's head ended (raises when it was too long)."""
        self._head_done = True
        # the bytes of this response so far bound its head: exact only past the limit
        if self._nbytes > self.max_head and _head_length(self._message_head) > self.max_head:
            raise self.head_too_long()

    def head_too_long(self) -> OpError:
        """The error of a response head over :attr:`max_head`."""
        return OpError(ErrorClass.PROTOCOL, f"header block over {format_size(self.max_head)}")

    def body_too_long(self) -> OpError:
        """The error of a kept response body over :attr:`max_body`."""
        return OpError(ErrorClass.PROTOCOL, f"response body over {format_size(self.max_body)}")

    def on_message_complete(self) -> None:
        """Parser callback of the :meth:`submit` path: a response ends."""
        self._in_message = False
        self._completed += 1
        parser = self._parser
        self._last_status = status = parser.get_status_code()
        if status < 200:
            return
        nbytes = self._nbytes
        self._nbytes = 0
        if not parser.should_keep_alive():
            self._ended_by_close()
        if self._done is None:
            self._protocol_failure("a response arrived with no request in flight")
        else:
            self._complete(status, nbytes)

    def _complete(self, status: int, nbytes: int) -> None:
        done = self._done
        self._done = None
        if status in self.accept:
            done(None, nbytes)  # type: ignore[misc]
        else:
            done(status_error(status), nbytes)  # type: ignore[misc]

    # -- the full path ------------------------------------------------------

    def send(self, request: bytes, on_response: OnResponse, *, keep_body: bool = False) -> None:
        """Write ``request``; call ``on_response(None, Response)`` when it is complete.

        Failures call ``on_response(OpError(...), None)``. Any status is a
        response (checking it is the caller's job). ``keep_body=False`` drops
        the body but still counts its bytes in ``Response.nbytes``.
        """
        if not self.alive:
            error = OpError(ErrorClass.CLOSED, self._peer_error or "the connection is closed")
            self._loop.call_soon(on_response, error, None)
            return
        if self.busy:
            raise RuntimeError("HttpConnection: a request is already in flight")
        collector = self._collector
        if collector is None:
            collector = self._collector = _Collector(self)
            self._full_parser = httptools.HttpResponseParser(collector)
        collector.keep_body = keep_body
        collector.body_size = 0
        self._parser = self._full_parser  # type: ignore[assignment]
        self._head = request.startswith(b"HEAD ")
        self._on_response = on_response
        loop = self._loop
        self._sent_at = now = loop.time()
        if self._timer is None:
            self._timer = loop.call_at(now + self.timeout, self._on_timer)
        self._write_request(request)
        self.sent.n += len(request)

    async def fetch(self, request: bytes, *, keep_body: bool = True) -> Response:
        """Send ``request`` and return its :class:`Response`; raise :class:`OpError` on failure."""
        future: asyncio.Future[Response] = self._loop.create_future()

        def on_response(error: OpError | None, response: Response | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(response)  # type: ignore[arg-type]

        self.send(request, on_response, keep_body=keep_body)
        return await future

    def _head_complete(self) -> None:
        """A HEAD response ends with its headers; llhttp would wait for a body.

        The parser, now expecting a body, is replaced before the callback runs
        (the callback may send the next request at once).
        """
        parser = self._parser
        self._full_parser = httptools.HttpResponseParser(self._collector)
        self._complete_response(parser)

    def _complete_response(self, parser: httptools.HttpResponseParser | None = None) -> None:
        collector = self._collector
        assert collector is not None
        if parser is None:
            parser = self._parser
        self._in_message = False
        status = parser.get_status_code()
        if status < 200:
            collector.reason = b""
            collector.headers = []
            collector.body = []
            collector.head_done = False
            return
        on_response = self._on_response
        response = Response(
            status,
            collector.reason.decode("latin-1").strip(),
            collector.headers,
            b"".join(collector.body),
            self._nbytes,
        )
        self._on_response = None
        self._nbytes = 0
        self._head = False
        collector.reason = b""
        collector.headers = []
        collector.body = []
        collector.head_done = False
        if not parser.should_keep_alive():
            self._ended_by_close()
        self._parser = self._fast_parser
        if on_response is None:
            self._protocol_failure("a response arrived with no request in flight")
        else:
            on_response(None, response)

    # -- failures -----------------------------------------------------------

    def _on_timer(self) -> None:
        self._timer = None
        if not self.busy:
            return
        deadline = self._sent_at + self.timeout
        if self._loop.time() >= deadline - 0.001:
            self.alive = False
            if self._transport is not None:
                self._transport.abort()
            self._fail(OpError(ErrorClass.TIMEOUT, f"no response within {self.timeout:g}s"))
        else:
            self._timer = self._loop.call_at(deadline, self._on_timer)

    def _protocol_failure(self, detail: str) -> None:
        self.alive = False
        if self._transport is not None:
            self._transport.abort()
        self._fail(OpError(ErrorClass.PROTOCOL, detail))

    def _fail(self, error: OpError) -> None:
        """Deliver ``error`` to the request in flight, if any."""
        done, on_response = self._done, self._on_response
        self._done = None
        self._on_response = None
        self._nbytes = 0
        if self._collector is not None:
            self._collector.body = []  # what a refused body held is freed now
        if done is not None:
            done(error, 0)
        elif on_response is not None:
            on_response(error, None)
