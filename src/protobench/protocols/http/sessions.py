"""Sessions of the ``http`` protocol: one keep-alive connection, one pre-encoded request.

Sessions are :class:`CallbackSession`\\ s on :meth:`HttpConnection.submit`: the
parser's completion callback reports the exchange, with no task, future or
timer per request. HEAD requests take the full path (:class:`HeadSession`):
their responses have no body.

A connection that the server closed between requests (``Connection: close``,
HTTP/1.0, a body delimited by the close, an idle timeout) or that was dropped
after a timeout is reopened by the session on its next request; the latency
runs from the request's send on the new connection (the connect time is not
in it) and a failure to connect is reported as that request's error. Each
such reopening adds one to the op's ``connects`` counter (the engine counts the
session's first connection). A reopened connection keeps the session's
stamps and reactor (the kernel's clock, when the run reads it). Without
``keepalive`` (``--disable-keepalive``) a session sends each request on a new
connection (its connect time is likewise outside the request's latency).

HTTP/2 sessions (:class:`H2Session`, opened by :func:`open_h2_session`) share
one :class:`~protobench.protocols.http.h2.link.H2Link` per ``streams`` sessions
of a group in a worker (:class:`~protobench.protocols.sharing.ConnectionShare`),
each with one stream in flight; the last session to close closes it. Every
connection opened is counted in ``connects``; each session names the protocol
it got (``negotiated``: ``h2``, ``h2c``, or ``http/1.1`` when TLS fell back).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from functools import partial

from protobench.protocols.base import CallbackSession, Done, SessionContext
from protobench.protocols.http.client import Endpoint, HttpConnection, Response, status_error
from protobench.protocols.http.h2.client import H2Connection
from protobench.protocols.http.h2.frames import RequestFrames, request_frames
from protobench.protocols.http.h2.headers import encode_request
from protobench.protocols.http.h2.link import H2Link
from protobench.protocols.http.h2.opening import open_h2
from protobench.protocols.http.options import RequestParams
from protobench.protocols.sharing import ConnectionShare
from protobench.protocols.timestamps.clock import Stamps
from protobench.vocab.counters import CONNECTS
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally

HTTP1 = "http/1.1"
"""What a session that fell back to HTTP/1.1 (ALPN) where HTTP/2 was asked negotiated."""
_FELL_BACK: set[tuple[str, ...]] = set()
"""The groups (protocol, target, group) whose server chose HTTP/1.1 over h2 in this worker."""


class HttpSession(CallbackSession):
    """One keep-alive connection sending one pre-encoded request back-to-back.

    ``submit`` is bound straight to the connection's ``submit`` with the
    request (a ``functools.partial``, no Python frame of its own); a submit on
    a connection that died goes to :meth:`_reopen` through ``on_dead``.
    ``count`` adds to the op's counters (``connects``: one per reopened connection);
    every connection it binds counts the requests it writes in ``sent``.
    Without ``keepalive`` every request after a connection's first goes on a
    new connection (the request says ``Connection: close``; the old one is closed).
    """

    def __init__(
        self,
        conn: HttpConnection,
        request: bytes,
        accept: frozenset[int],
        tls: ssl.SSLContext | None,
        count: Callable[[str, int], None],
        sent: Tally,
        keepalive: bool = True,
    ) -> None:
        self._request = request
        self._sent = sent
        self._accept = accept
        self._tls = tls
        self._count = count
        self._keepalive = keepalive
        self._used = False
        self._reopening: asyncio.Task[None] | None = None
        self._conn = self._bind(conn)

    def _bind(self, conn: HttpConnection) -> HttpConnection:
        conn.accept = self._accept
        conn.sent = self._sent
        self._used = False
        if self._keepalive:
            conn.on_dead = self._reopen
            self.submit = partial(conn.submit, self._request)  # type: ignore[method-assign]
        return conn

    def submit(self, done: Done) -> None:
        """The path of a session without ``keepalive`` (and of HEAD requests): a connection
        that served a request already, or died, is replaced first."""
        conn = self._conn
        if conn.alive and (self._keepalive or not self._used):
            self._start(conn, done)
        else:
            conn.close()
            self._reopen(self._request, done)

    def _start(self, conn: HttpConnection, done: Done) -> None:
        self._used = True
        conn.submit(self._request, done)

    def _reopen(self, request: bytes, done: Done) -> None:
        """Reconnect in the background, then start the exchange (or report the failure)."""
        self._reopening = asyncio.get_running_loop().create_task(self._reconnect(done))

    async def _reconnect(self, done: Done) -> None:
        old = self._conn
        try:
            conn = await HttpConnection.connect(
                old.endpoint,
                ssl=self._tls,
                timeout=old.timeout,
                stamps=old.stamps,
                reactor=old.reactor,
                max_head=old.max_head,
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
        self._used = False
        return conn

    def _start(self, conn: HttpConnection, done: Done) -> None:
        self._used = True
        accept = self._accept

        def on_response(error: OpError | None, response: Response | None) -> None:
            if error is not None:
                done(error, 0)
            elif response is not None and response.status in accept:
                done(None, response.nbytes)
            elif response is not None:
                done(status_error(response.status), response.nbytes)

        conn.send(self._request, on_response)


class H2Session(CallbackSession):
    """One stream at a time on a connection shared with the group's other sessions."""

    def __init__(
        self,
        link: H2Link,
        request: RequestFrames,
        stamps: Stamps,
        release: Callable[[], bool],
        negotiated: str,
    ) -> None:
        self.negotiated = negotiated
        self._link = link
        self._request = request
        self._stamps = stamps
        self._release = release
        self._closed = False

    def submit(self, done: Done) -> None:
        self._link.conn.submit(self._request, self._stamps, done)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._release():
                self._link.close()


class _Fallback:
    """An HTTP/1.1 connection that TLS fell back to: the first session of the group takes it."""

    __slots__ = ("conn", "taken")

    def __init__(self, conn: HttpConnection) -> None:
        self.conn = conn
        self.taken = False


def _alive(shared: H2Link | _Fallback) -> bool:
    return isinstance(shared, H2Link) and shared.alive


async def open_h2_session(
    ctx: SessionContext,
    endpoint: Endpoint,
    path: str,
    headers: list[tuple[str, str]],
    body: bytes,
    accept: frozenset[int],
    tls: ssl.SSLContext | None,
    fallback: bool,
) -> H2Session | HttpConnection | None:
    """A session on the group's HTTP/2 connection with room for one more stream.

    Over TLS with ``fallback`` the server may choose HTTP/1.1: then the first
    session gets that connection (an :class:`HttpConnection` to run on as
    HTTP/1.1), and every other session of the group ``None`` (open your own).
    """
    params = ctx.params
    assert isinstance(params, RequestParams)
    key = ("http", ctx.target, ctx.group)
    if key in _FELL_BACK:
        return None
    fields = list(headers)
    if body or params.method in ("POST", "PUT", "PATCH"):
        fields.append(("content-length", str(len(body))))
    try:
        block = encode_request(params.method, endpoint.scheme, endpoint.authority, path, fields)
    except ValueError as exc:
        raise OpError(ErrorClass.LOCAL, str(exc)) from None
    request = request_frames(block, body)
    protocol = "h2" if endpoint.tls else "h2c"

    async def connect(may_fall_back: bool) -> H2Connection | HttpConnection:
        conn = await open_h2(
            endpoint,
            ssl=tls,
            timeout=ctx.timeout,
            fallback=may_fall_back,
            reactor=ctx.reactor,
            stamps=ctx.stamps,
        )
        ctx.count(CONNECTS, 1)
        return conn

    async def reopen() -> H2Connection:
        conn = await connect(False)
        assert isinstance(conn, H2Connection)
        return conn

    async def opener() -> H2Link | _Fallback:
        conn = await connect(fallback)
        if isinstance(conn, HttpConnection):
            _FELL_BACK.add(key)
            return _Fallback(conn)
        return H2Link(conn, reopen, accept, ctx.count, ctx.sent)

    share = ConnectionShare[H2Link | _Fallback].of(key, params.streams, _alive)
    shared, release = await share.acquire(opener)
    if isinstance(shared, _Fallback):
        release()
        if shared.taken:
            return None
        shared.taken = True
        return shared.conn
    transport = shared.conn.stamps
    ctx.stamps.kernel_receive = transport.kernel_receive
    ctx.stamps.kernel_send = transport.kernel_send
    return H2Session(shared, request, ctx.stamps, release, protocol)
