"""What a Haystack server has: ``about``, ``ops``, ``formats`` and a few entities.

:func:`discover` logs in as the plugin does (SCRAM unless ``auth = false``;
a server that answers ``HELLO`` with 200 needs no login) over protobench's own
HTTP client, then asks ``about``, ``ops`` and ``formats`` and reads a few
sites, equips and points (``limit`` each), with the points that have history
and the writable ones. Every request is a control request of the plugin
(JSON, decoded in full); a refusal is an :class:`OpError` naming the op, but
a read answered with an error grid (a filter the server does not support)
finds no entities. A server that closes the connection after each response
(HTTP/1.0, ``Connection: close``: werkzeug's development server) gets a new
connection for the next request, as sessions reconnect.
"""

from __future__ import annotations

import re
import ssl as ssl_module
from dataclasses import dataclass, field
from typing import Any

from hs_py.grid import Grid
from hs_py.kinds import Marker

from protobench.protocols.haystack.credentials import resolve_password
from protobench.protocols.haystack.grids import ERROR_CODE
from protobench.protocols.haystack.options import HaystackOptions, ReadParams
from protobench.protocols.haystack.requests import Framing, Request, request_grids
from protobench.protocols.haystack.scram import login
from protobench.protocols.haystack.sessions.opening import control
from protobench.protocols.http.client import (
    HttpConnection,
    Reconnecting,
    make_ssl_context,
    parse_url,
)
from protobench.vocab.errors import ErrorClass, OpError

LIMIT = 5
"""Entities read per filter."""
FILTERS = {
    "sites": "site",
    "equips": "equip",
    "points": "point",
    "his_points": "point and his",
    "writable_points": "point and writable",
}
SAFE_ID = re.compile(r"[A-Za-z0-9_:\-.~]+")
"""The characters of a Haystack Ref id (others cannot go into a filter)."""


@dataclass
class Entity:
    """One entity: its id (without ``@``) and display name."""

    id: str
    dis: str


@dataclass
class ServerInfo:
    """What :func:`discover` found."""

    url: str
    user: str | None
    """The account logged in as; ``None``: no login (``auth = false`` or none needed)."""
    about: dict[str, str]
    ops: list[str]
    formats: list[tuple[str, bool, bool]]
    """(MIME type, the server receives it, the server sends it)."""
    entities: dict[str, list[Entity]] = field(default_factory=dict)
    """Up to :data:`LIMIT` entities per key of :data:`FILTERS`."""


def _text(value: Any) -> str:
    if isinstance(value, Marker):
        return "✓"
    return str(getattr(value, "val", value))


def _entities(grid: Grid) -> list[Entity]:
    found = []
    for row in grid.rows:
        ref = row.get("id")
        ident = str(getattr(ref, "val", ""))
        if not SAFE_ID.fullmatch(ident):
            continue
        dis = getattr(ref, "dis", None) or row.get("dis") or row.get("navName") or ""
        found.append(Entity(ident, str(dis)))
    return found


async def discover(url: str, options: HaystackOptions, wait: float) -> ServerInfo:
    """Ask the Haystack server at ``url`` (its API base, e.g. ``http://host/api``) what it has.

    ``wait`` bounds each request (seconds).
    """
    try:
        endpoint = parse_url(url)
    except ValueError as exc:
        raise OpError(ErrorClass.CONNECT, str(exc)) from None
    ssl: ssl_module.SSLContext | None = None
    if endpoint.tls:
        try:
            ssl = make_ssl_context(insecure=options.insecure, ca_file=options.ca_file)
        except OSError as exc:  # a missing or bad ca_file
            raise OpError(ErrorClass.CONNECT, f"ca_file {options.ca_file}: {exc}") from None
    framing = Framing.of(options)

    async def reopen() -> HttpConnection:
        return await HttpConnection.connect(endpoint, ssl=ssl, timeout=wait)

    conn = Reconnecting(await reopen(), reopen)
    try:
        token: str | None = None
        user: str | None = None
        if options.auth:
            password = resolve_password(options.password, options.password_env)
            token, _ = await login(conn, endpoint, options.user, password, framing.headers)
            del password
            user = options.user if token else None
            token = token or None

        async def ask(request: Request) -> Grid:
            return await control(conn, endpoint, token, request, framing)

        about = await ask(("GET", "about", None))
        ops = await ask(("GET", "ops", None))
        info = ServerInfo(
            url=url,
            user=user,
            about={k: _text(v) for k, v in (about.rows[0] if about.rows else {}).items()},
            ops=[str(row["name"]) for row in ops.rows if "name" in row],
            formats=[],
        )
        if "formats" in info.ops:
            formats = await ask(("GET", "formats", None))
            info.formats = [
                (str(row["mime"]), "receive" in row, "send" in row)
                for row in formats.rows
                if "mime" in row
            ]
        if "read" in info.ops:
            for key, expr in FILTERS.items():
                read = request_grids("read", ReadParams(filters=[expr], limit=LIMIT), [])[0]
                try:
                    info.entities[key] = _entities(await ask(read))
                except OpError as exc:
                    if exc.code != ERROR_CODE:
                        raise  # a refusal of the request itself (406, 415...), not of the filter
                    info.entities[key] = []  # an error grid: the server cannot read this filter
        return info
    finally:
        conn.conn.close()
