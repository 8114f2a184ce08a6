"""A Haystack session over the WebSocket API (``haystack`` subprotocol).

After the upgrade the first message is ``{"authToken": ...}`` (when the
server requires auth). Each exchange sends ``{"op", "grid", "id"}`` with a
fresh id and waits for the reply carrying that id; replies to earlier ids
(late answers to a request that timed out) are skipped. The reply's
``grid`` is validated like an HTTP JSON response.

Error mapping: a close with code 4003 (the server's "Authentication
required") is ``auth``; any other close is ``closed``; no reply in time is
``timeout``; a reply that is not JSON or not a grid is ``validation``; an
error grid, a message without an ``id`` and without a grid (a server that
cannot tell which request failed, e.g. ``{"error": "unknown op: about"}``) and a
reply to this request without a grid are ``protocol`` with the server's text
(``{"type": "authErr"}`` is ``auth``). Messages with a grid but another id or
none (late replies, watch pushes) are skipped.
An upgrade the server refuses is ``protocol`` coded by its status and quoting
its error grid's ``dis`` (``auth`` for 401/403); an upgrade that does not
accept the ``haystack`` subprotocol is ``protocol`` coded ``subprotocol``.
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from collections.abc import Callable

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    NegotiationError,
)

from protobench.protocols.base import AsyncSession
from protobench.protocols.haystack.grids import (
    UNKNOWN_ROWS,
    Depth,
    check_json_decoded,
    check_json_grid,
    check_json_meta,
    error_text,
)
from protobench.protocols.haystack.scram import Headers
from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally

AUTH_CLOSE_CODE = 4003
MAX_MESSAGE = 16 * 1024 * 1024
_GRID_PREFIX = b'{"grid":'

Templates = Callable[[], str]
"""Gives the next message, with a ``%d`` slot for its id."""


async def open_ws(
    url: str,
    token: str | None,
    *,
    ssl: ssl_module.SSLContext | None,
    timeout: float,  # noqa: ASYNC109 - also the upgrade's open_timeout
    headers: Headers = (),
) -> ClientConnection:
    """Connect to ``url`` with the ``haystack`` subprotocol (and ``headers``), send the token."""
    try:
        ws = await connect(
            url,
            additional_headers=list(headers) or None,
            subprotocols=["haystack"],  # type: ignore[list-item]
            ssl=ssl,
            compression=None,
            proxy=None,
            open_timeout=timeout,
            ping_interval=None,
            max_size=MAX_MESSAGE,
        )
    except TimeoutError:
        raise OpError(
            ErrorClass.TIMEOUT, f"WebSocket upgrade to {url} took more than {timeout:g}s"
        ) from None
    except ConnectionRefusedError:
        raise OpError(ErrorClass.REFUSED, f"{url} refused the connection") from None
    except InvalidStatus as exc:
        status = exc.response.status_code
        error_class = ErrorClass.AUTH if status in (401, 403) else ErrorClass.PROTOCOL
        said = error_text(bytes(exc.response.body or b""))
        raise OpError(
            error_class,
            f"WebSocket upgrade to {url} refused" + (f": {said}" if said else ""),
            code=str(status),
        ) from None
    except NegotiationError as exc:
        raise _no_subprotocol(url, str(exc)) from None
    except (InvalidHandshake, OSError) as exc:
        raise OpError(ErrorClass.CONNECT, f"WebSocket connect to {url}: {exc}") from None
    if ws.subprotocol != "haystack":
        await ws.close()
        raise _no_subprotocol(url, f"it chose {ws.subprotocol or 'none'}")
    if token is not None:
        try:
            await ws.send(orjson.dumps({"authToken": token}).decode())
        except ConnectionClosed as exc:
            raise closed_error(exc) from None
    return ws


def _no_subprotocol(url: str, why: str) -> OpError:
    return OpError(
        ErrorClass.PROTOCOL,
        f"{url} did not accept the haystack WebSocket subprotocol ({why})",
        code="subprotocol",
    )


def closed_error(exc: ConnectionClosed) -> OpError:
    """The taxonomy of a closed WebSocket: 4003 is ``auth``, the rest ``closed``."""
    close = exc.rcvd or exc.sent
    code = close.code if close is not None else 1006
    reason = close.reason if close is not None else ""
    if code == AUTH_CLOSE_CODE:
        return OpError(ErrorClass.AUTH, reason or "authentication required", code=str(code))
    return OpError(ErrorClass.CLOSED, f"WebSocket closed ({code} {reason})".strip(), code=str(code))


class HaystackWsSession(AsyncSession):
    """One virtual user sending one Haystack op over a WebSocket."""

    def __init__(
        self,
        ws: ClientConnection,
        templates: Templates,
        depth: Depth,
        timeout: float,
        *,
        min_rows: int = 0,
        closing: str | None = None,
        sent: Tally | None = None,
        stamps: Stamps | None = None,
    ) -> None:
        self._ws = ws
        self._sent = sent or Tally()
        self._stamps = stamps if stamps is not None else Stamps()
        self._templates = templates
        self._depth: Depth = depth
        self._timeout = timeout
        self._min_rows = min_rows
        self._closing = closing
        self._id = 0

    async def call(self) -> int:
        self._id += 1
        ident = self._id
        ws = self._ws
        try:
            async with asyncio.timeout(self._timeout):
                message = self._templates() % ident
                self._stamps.sent = perf_ns()  # websockets frames and writes it in send()
                await ws.send(message)
                self._sent.n += len(message.encode())
                while True:
                    raw = await ws.recv(decode=False)
                    rows = self._check(raw, ident)
                    if rows is not None:
                        break
        except TimeoutError:
            raise OpError(ErrorClass.TIMEOUT, f"no reply within {self._timeout:g}s") from None
        except ConnectionClosed as exc:
            raise closed_error(exc) from None
        if rows != UNKNOWN_ROWS and rows < self._min_rows:
            raise OpError(
                ErrorClass.VALIDATION, f"expected at least {self._min_rows} rows, got {rows}"
            )
        return len(raw)

    def _check(self, raw: bytes, ident: int) -> int | None:
        """The reply's row count, or ``None`` when it answers another (earlier) request.

        At ``meta`` depth a reply shaped ``{"grid":...,"id":N}`` (hs_py's) is
        checked without parsing its rows; any other shape is parsed in full.
        """
        if self._depth == "meta" and raw.startswith(_GRID_PREFIX):
            suffix = b',"id":%d}' % ident
            if raw.endswith(suffix):
                return check_json_meta(raw[len(_GRID_PREFIX) : -len(suffix)])
        try:
            reply = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise OpError(ErrorClass.VALIDATION, f"reply is not JSON: {exc}") from None
        if not isinstance(reply, dict):
            raise OpError(ErrorClass.VALIDATION, "reply is not a JSON object")
        if "grid" not in reply and reply.get("id", ident) == ident:
            if reply.get("type") == "authErr":
                raise OpError(ErrorClass.AUTH, "the server refused the token (authErr)")
            said = error_text(raw)
            raise OpError(ErrorClass.PROTOCOL, f"reply without a grid: {said}".strip())
        if reply.get("id") != ident:
            return None  # a late reply to an earlier request, or a push (a watch's)
        grid = reply.get("grid")
        return check_json_decoded(grid) if self._depth == "decode" else check_json_grid(grid)

    async def close(self) -> None:
        try:
            async with asyncio.timeout(1.0):
                if self._closing is not None:
                    await self._ws.send(self._closing % (self._id + 1))
                await self._ws.close()
        except (ConnectionClosed, TimeoutError, OSError):
            pass
