"""A Haystack session over HTTP: pre-encoded requests on one keep-alive connection.

The hot path is :meth:`HaystackHttpSession.submit`: take the next pre-encoded
request of the op's cycle, send it on the shared lean HTTP client
(:mod:`protobench.protocols.http.client`), and on the response check the
status and the grid (:func:`protobench.protocols.haystack.grids.check`).

Status mapping (:func:`refusal`): 200 with a valid grid is a success; 401/403
is ``auth`` (a 401 also marks the token stale: the next request logs in again
first); any other status is ``protocol`` with the status as its code. The
detail quotes the server: its error grid's ``dis``, else the start of the body.

A connection the server closed between requests (an idle keep-alive timeout:
uvicorn's is 5 s) is reopened before the next request is sent; the connect
time then counts in that request's latency, and a failure to connect is that
request's error; the op's ``connects`` counter counts such reopenings.

The ``auth`` op's session (:class:`AuthSession`) repeats the whole SCRAM login instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from protobench.protocols.base import AsyncSession, CallbackSession, Done
from protobench.protocols.haystack.grids import UNKNOWN_ROWS, Depth, Format, check, error_text
from protobench.protocols.haystack.requests import Framing
from protobench.protocols.haystack.scram import login
from protobench.protocols.http.client import (
    Endpoint,
    Fetcher,
    HttpConnection,
    Reconnecting,
    Response,
    status_error,
)
from protobench.vocab.errors import ErrorClass, OpError

Source = Callable[[], bytes]
"""Gives the next request to send."""
SourceFactory = Callable[[str | None], Source]
"""Builds the request source for an auth token (``None``: no authentication)."""
Relogin = Callable[[Fetcher, str | None], Awaitable[str]]
"""Logs in again on a connection, given the rejected token; returns the new token."""
Reconnect = Callable[[], Awaitable[HttpConnection]]
"""Opens a new connection to the target."""


MEDIA_HINT = (
    "the server refused the request's media types: the content_type option sets the "
    "Content-Type of request bodies, format (json, zinc) the Accept"
)
"""What a 406 or 415 adds to the server's words."""


def refusal(response: Response, op: str = "") -> OpError:
    """The error of a non-200 reply: ``auth`` for 401/403, else ``protocol``, coded by status.

    The detail is the server's own words (:func:`~.grids.error_text`), else the
    status's reason phrase; ``op`` (the Haystack op) prefixes it when given. A
    406 (Not Acceptable) or 415 (Unsupported Media Type) names the options that
    change the request's media types (:data:`MEDIA_HINT`).
    """
    status = response.status
    text = error_text(response.body)
    if status in (401, 403):
        error_class, detail = ErrorClass.AUTH, text or "token rejected"
    else:
        error_class, detail = ErrorClass.PROTOCOL, text or status_error(status).detail
    if status in (406, 415):
        detail = f"{detail} ({MEDIA_HINT})"
    return OpError(error_class, f"{op}: {detail}" if op else detail, code=str(status))


class HaystackHttpSession(CallbackSession):
    """One virtual user sending one Haystack op over HTTP."""

    def __init__(
        self,
        conn: HttpConnection,
        reconnect: Reconnect,
        make_source: SourceFactory,
        token: str | None,
        fmt: Format,
        depth: Depth,
        *,
        min_rows: int = 0,
        relogin: Relogin | None = None,
        closing: SourceFactory | None = None,
    ) -> None:
        self._conn = conn
        self._reconnect = reconnect
        self._make_source = make_source
        self._token = token
        self._source = make_source(token)
        self._fmt: Format = fmt
        self._depth: Depth = depth
        self._min_rows = min_rows
        self._relogin = relogin
        self._closing = closing
        self._stale = False
        self._done: Done | None = None
        self._task: asyncio.Task[None] | None = None

    def submit(self, done: Done) -> None:
        if self._stale or not self._conn.alive:
            self._task = asyncio.ensure_future(self._prepare_then_send(done))
            return
        self._done = done
        self._conn.send(self._source(), self._on_response, keep_body=True)

    def _on_response(self, error: OpError | None, response: Response | None) -> None:
        done = self._done
        self._done = None
        assert done is not None
        if error is not None or response is None:
            done(error or OpError(ErrorClass.CLOSED, "no response"), 0)
            return
        nbytes = response.nbytes
        status = response.status
        if status != 200:
            self._stale = status == 401 and self._relogin is not None
            done(refusal(response), nbytes)
            return
        try:
            rows = check(response.body, response.header("content-type"), self._fmt, self._depth)
        except OpError as exc:
            done(exc, nbytes)
            return
        if rows != UNKNOWN_ROWS and rows < self._min_rows:
            done(
                OpError(
                    ErrorClass.VALIDATION, f"expected at least {self._min_rows} rows, got {rows}"
                ),
                nbytes,
            )
            return
        done(None, nbytes)

    async def _prepare_then_send(self, done: Done) -> None:
        """Reconnect and/or log in again, then send the request."""
        try:
            if not self._conn.alive:
                self._conn = await self._reconnect()
            if self._stale and self._relogin is not None:
                link = Reconnecting(self._conn, self._reconnect)
                try:
                    self._token = await self._relogin(link, self._token)
                finally:
                    self._conn = link.conn
                if not self._conn.alive:
                    self._conn = await self._reconnect()
                self._stale = False
                self._source = self._make_source(self._token)
        except OpError as exc:
            done(exc, 0)
            return
        self._done = done
        self._conn.send(self._source(), self._on_response, keep_body=True)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._closing is not None and self._conn.alive and not self._conn.busy:
            try:
                async with asyncio.timeout(1.0):
                    await self._conn.fetch(self._closing(self._token)(), keep_body=False)
            except (OpError, TimeoutError):
                pass
        self._conn.close()


class AuthSession(AsyncSession):
    """``auth``: every exchange is a full SCRAM handshake on the session's connection.

    The salted password is derived once per worker (:mod:`..scram_proof`), so
    from the second login on an exchange times the server's three replies.
    """

    def __init__(
        self,
        conn: HttpConnection,
        endpoint: Endpoint,
        user: str,
        password: str,
        framing: Framing,
        reconnect: Reconnect,
    ) -> None:
        self._conn = conn
        self._endpoint = endpoint
        self._user = user
        self._password = password
        self._headers = framing.headers
        self._reconnect = reconnect

    async def call(self) -> int:
        link = Reconnecting(self._conn, self._reconnect)
        try:
            _, nbytes = await login(link, self._endpoint, self._user, self._password, self._headers)
        finally:
            self._conn = link.conn
        return nbytes

    async def close(self) -> None:
        self._conn.close()
