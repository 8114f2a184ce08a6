"""Opening a Haystack session (the control path, not measured).

1. connect to the target (the API base URL, e.g. ``http://127.0.0.1:8080/api``);
2. log in with SCRAM-SHA-256 (:mod:`..scram`), once per session or once per
   worker (``auth_per``), unless ``auth = false``;
3. for point ops, resolve the points (``points``, else a ``read`` of
   ``point_filter`` limited to ``max_points``); for watch ops, open a watch;
4. pre-encode the op's request cycle with ``Authorization: BEARER``, starting
   at the session's index so sessions spread over filters and points.

Each exchange is then one request on the fast path (:mod:`.http`, :mod:`.ws`);
``auth`` sessions instead repeat the whole handshake (:class:`.http.AuthSession`).
"""

from __future__ import annotations

import itertools
import random
import ssl as ssl_module
from functools import cache

from hs_py.encoding import json as hs_json
from hs_py.grid import Grid

from protobench.protocols.base import Session, SessionContext
from protobench.protocols.haystack import tokens
from protobench.protocols.haystack.credentials import resolve_password
from protobench.protocols.haystack.grids import ERROR_CODE
from protobench.protocols.haystack.options import (
    HaystackOptions,
    HisWriteParams,
    PointParams,
    ReadParams,
)
from protobench.protocols.haystack.requests import (
    Framing,
    Request,
    his_write_grid,
    http_request,
    request_grids,
    watch_close_grid,
    watch_sub_grid,
    ws_template,
)
from protobench.protocols.haystack.sessions.http import (
    AuthSession,
    HaystackHttpSession,
    Source,
    refusal,
)
from protobench.protocols.haystack.sessions.ws import HaystackWsSession, open_ws
from protobench.protocols.http.client import (
    Endpoint,
    HttpConnection,
    make_ssl_context,
    parse_url,
)
from protobench.protocols.timestamps.clock import Stamps
from protobench.protocols.timestamps.reactor import Reactor
from protobench.vocab.counters import CONNECTS
from protobench.vocab.errors import ErrorClass, OpError


async def open_session(ctx: SessionContext) -> Session:
    """Connect, log in and prepare the session of ``ctx.op``; raise :class:`OpError`."""
    options = ctx.options
    assert isinstance(options, HaystackOptions)
    try:
        endpoint = parse_url(ctx.target)
    except ValueError as exc:
        raise OpError(ErrorClass.CONNECT, str(exc)) from None
    ssl = _ssl_context(options.insecure, options.ca_file) if endpoint.tls else None
    conn = await _connect(ctx, options, endpoint, ssl)
    try:
        return await _open(ctx, options, endpoint, ssl, conn)
    except BaseException:
        conn.close()
        raise


def _clock(ctx: SessionContext) -> tuple[Stamps | None, Reactor | None]:
    """The stamps and reactor of a session's HTTP connections: its own (the reactor when the
    run reads the kernel's clock), but none for ``auth``, whose exchange is a whole SCRAM
    login (several requests: the engine times it from before it starts), nor for the
    WebSocket ops, whose HTTP connection only sets them up."""
    if ctx.op == "auth" or ctx.op.startswith("ws-"):
        return None, None
    return ctx.stamps, ctx.reactor


@cache
def _ssl_context(insecure: bool, ca_file: str | None) -> ssl_module.SSLContext:
    return make_ssl_context(insecure=insecure, ca_file=ca_file)


async def _connect(
    ctx: SessionContext,
    options: HaystackOptions,
    endpoint: Endpoint,
    ssl: ssl_module.SSLContext | None,
) -> HttpConnection:
    """A connection to ``endpoint`` on the session's clock (:func:`_clock`), bounded by the
    options' header and body limits."""
    stamps, reactor = _clock(ctx)
    return await HttpConnection.connect(
        endpoint,
        ssl=ssl,
        timeout=ctx.timeout,
        stamps=stamps,
        reactor=reactor,
        max_head=options.max_header_size,
        max_body=options.max_body_size,
    )


async def _open(
    ctx: SessionContext,
    options: HaystackOptions,
    endpoint: Endpoint,
    ssl: ssl_module.SSLContext | None,
    conn: HttpConnection,
) -> Session:
    password = resolve_password(options.password, options.password_env) if options.auth else ""
    framing = Framing.of(options)

    async def reconnect() -> HttpConnection:
        conn = await _connect(ctx, options, endpoint, ssl)
        ctx.count(CONNECTS, 1)
        conn.sent = ctx.sent
        return conn

    if ctx.op == "auth":
        conn.sent = ctx.sent
        return AuthSession(conn, endpoint, options.user, password, framing, reconnect)
    shared = options.auth_per == "worker"
    token = (
        await tokens.obtain(conn, endpoint, options.user, password, framing.headers, shared=shared)
        if options.auth
        else None
    )
    op = ctx.op.removeprefix("ws-")
    params = ctx.params
    points: list[str] = []
    watch_id: str | None = None
    if isinstance(params, PointParams):
        points = _rotate(await _points(conn, endpoint, token, params, framing), ctx.index)
    if op in ("watch-sub", "watch-poll"):
        reply = await control(
            conn, endpoint, token, ("POST", "watchSub", watch_sub_grid(points, None)), framing
        )
        watch_id = str(reply.meta.get("watchId", ""))
        if not watch_id:
            raise OpError(ErrorClass.VALIDATION, "watchSub reply has no watchId")
    min_rows = params.min_rows if isinstance(params, ReadParams) else 0
    depth = options.validation
    if min_rows and depth == "meta":
        depth = "grid"
    rng = random.Random(ctx.index)
    closing = ("POST", "watchUnsub", watch_close_grid(watch_id)) if watch_id else None

    def requests() -> list[Request]:
        return _rotate(request_grids(op, params, points, watch_id), ctx.index)

    if ctx.op.startswith("ws-"):
        conn.close()
        ws = await open_ws(
            _ws_url(endpoint, options.ws_path),
            token,
            ssl=ssl,
            timeout=ctx.timeout,
            headers=framing.headers,
        )
        if isinstance(params, HisWriteParams):
            cycle = itertools.cycle(points)
            samples = params.samples

            def ws_his_write() -> str:
                return ws_template(("POST", "hisWrite", his_write_grid(next(cycle), samples, rng)))

            return HaystackWsSession(
                ws,
                ws_his_write,
                depth,
                ctx.timeout,
                min_rows=min_rows,
                sent=ctx.sent,
                stamps=ctx.stamps,
            )
        templates = itertools.cycle([ws_template(r) for r in requests()]).__next__
        return HaystackWsSession(
            ws,
            templates,
            depth,
            ctx.timeout,
            min_rows=min_rows,
            closing=ws_template(closing) if closing else None,
            sent=ctx.sent,
            stamps=ctx.stamps,
        )

    def make_source(tok: str | None) -> Source:
        if isinstance(params, HisWriteParams):
            cycle = itertools.cycle(points)
            samples = params.samples
            return lambda: http_request(
                endpoint,
                ("POST", "hisWrite", his_write_grid(next(cycle), samples, rng)),
                framing,
                tok,
            )
        encoded = [http_request(endpoint, r, framing, tok) for r in requests()]
        return itertools.cycle(encoded).__next__

    def make_closing(tok: str | None) -> Source:
        assert closing is not None
        encoded = http_request(endpoint, closing, framing, tok)
        return lambda: encoded

    async def relogin(on: HttpConnection, rejected: str | None) -> str:
        if shared and rejected is not None:
            tokens.forget(endpoint, options.user, rejected)
        return await tokens.obtain(
            on, endpoint, options.user, password, framing.headers, shared=shared
        )

    conn.sent = ctx.sent
    return HaystackHttpSession(
        conn,
        reconnect,
        make_source,
        token,
        options.format,
        depth,
        min_rows=min_rows,
        relogin=relogin if options.auth else None,
        closing=make_closing if closing else None,
    )


async def _points(
    conn: HttpConnection,
    endpoint: Endpoint,
    token: str | None,
    params: PointParams,
    framing: Framing,
) -> list[str]:
    """The op's point ids: given, or the first ``max_points`` matching ``point_filter``."""
    if params.points:
        return list(params.points)
    reply = await control(
        conn,
        endpoint,
        token,
        request_grids(
            "read", ReadParams(filters=[params.point_filter], limit=params.max_points), []
        )[0],
        framing,
    )
    ids = [str(row["id"].val) for row in reply.rows if hasattr(row.get("id"), "val")]
    if not ids:
        raise OpError(ErrorClass.VALIDATION, f"no point matches {params.point_filter!r}")
    return ids


async def control(
    conn: HttpConnection, endpoint: Endpoint, token: str | None, request: Request, framing: Framing
) -> Grid:
    """One request off the measured path, decoded in full (JSON, whatever the op's format)."""
    if framing.fmt != "json":
        framing = Framing("json", None, framing.headers)
    response = await conn.fetch(http_request(endpoint, request, framing, token))
    if response.status != 200:
        raise refusal(response, request[1])
    try:
        grid = hs_json.decode_grid(response.body)
    except Exception as exc:
        raise OpError(ErrorClass.VALIDATION, f"{request[1]}: undecodable grid: {exc}") from None
    if grid.is_error:
        raise OpError(ErrorClass.PROTOCOL, str(grid.meta.get("dis", "error grid")), code=ERROR_CODE)
    assert isinstance(grid, Grid)
    return grid


def _ws_url(endpoint: Endpoint, path: str) -> str:
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    scheme = "wss" if endpoint.tls else "ws"
    return f"{scheme}://{host}:{endpoint.port}{endpoint.base_path}/{path.lstrip('/')}"


def _rotate[T](items: list[T], start: int) -> list[T]:
    """``items`` starting at ``start`` (mod its length), so sessions spread over a list."""
    if not items:
        return items
    k = start % len(items)
    return items[k:] + items[:k]
