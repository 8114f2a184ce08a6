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
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from functools import partial

from protobench.protocols.base import CallbackSession, Done
from protobench.protocols.http.client import HttpConnection, Response, status_error
from protobench.vocab.counters import CONNECTS
from protobench.vocab.errors import OpError
from protobench.vocab.recorder import Tally


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
