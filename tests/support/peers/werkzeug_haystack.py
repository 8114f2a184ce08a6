"""A Haystack server on werkzeug's development server (the server of Flask apps), in a thread.

werkzeug's server without threads speaks HTTP/1.0: it closes the connection
after every response. The WSGI app answers in Haystack 3 JSON, whose strings
carry type prefixes (``"s:..."``, ``"r:..."``, ``"m:"``), as Haystack 3 servers
such as shaystack write it, under ``/api``:

* ``GET about``, ``ops``, ``formats``; ``read`` (``GET ?filter=``, or ``POST`` a
  grid) of a site, two equips and three points (``his``, ``writable``), by
  marker tags joined with ``and`` or ``id==@ID``; any other filter is answered
  with an error grid;
* a request whose ``Accept`` does not take ``application/json`` is a 406, a
  ``POST`` whose ``Content-Type`` is not ``application/json`` a 415, each
  with an error grid whose ``dis`` is ``"s:..."``.

It counts the requests it answered (:attr:`WerkzeugHaystack.requests`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs

import orjson
from werkzeug.serving import BaseWSGIServer, make_server

ENTITIES: list[dict[str, str]] = [
    {"id": "r:s1 Site One", "dis": "s:Site One", "site": "m:", "area": "n:1200 ft²"},
    {"id": "r:e1 AHU-1", "dis": "s:AHU-1", "equip": "m:", "siteRef": "r:s1"},
    {"id": "r:e2 VAV-1", "dis": "s:VAV-1", "equip": "m:", "siteRef": "r:s1"},
    {"id": "r:p1 SAT", "dis": "s:SAT", "point": "m:", "his": "m:", "equipRef": "r:e1"},
    {"id": "r:p2 SP", "dis": "s:SP", "point": "m:", "writable": "m:", "equipRef": "r:e1"},
    {"id": "r:p3 Flow", "dis": "s:Flow", "point": "m:", "equipRef": "r:e2"},
]
OPS = ["about", "ops", "formats", "read"]
Start = Any
"""WSGI's ``start_response``."""


def grid(rows: list[dict[str, str]], meta: dict[str, str] | None = None) -> bytes:
    """A grid in Haystack 3 JSON."""
    names = list(dict.fromkeys(name for row in rows for name in row)) or ["empty"]
    body = {"meta": {"ver": "3.0", **(meta or {})}, "cols": [{"name": n} for n in names]}
    return orjson.dumps({**body, "rows": rows})


def error_grid(dis: str) -> bytes:
    return grid([], {"err": "m:", "dis": f"s:{dis}"})


def matches(entity: dict[str, str], expr: str) -> bool | None:
    """Whether ``entity`` matches the filter; ``None`` for a filter this server cannot read."""
    expr = expr.strip()
    if expr.startswith("id==@"):
        return entity["id"][2:].split()[0] == expr[5:]
    tags = [tag.strip() for tag in expr.split(" and ")]
    if not all(tag.isidentifier() for tag in tags):
        return None
    return all(entity.get(tag) == "m:" for tag in tags)


class WerkzeugHaystack:
    """The WSGI app."""

    def __init__(self) -> None:
        self.requests = 0

    def __call__(self, environ: dict[str, Any], start: Start) -> Iterable[bytes]:
        self.requests += 1
        status, body = self.answer(environ)
        start(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def answer(self, environ: dict[str, Any]) -> tuple[str, bytes]:
        accept = environ.get("HTTP_ACCEPT", "*/*")
        if "application/json" not in accept and "*/*" not in accept:
            return "406 Not Acceptable", error_grid(f"Not acceptable: {accept}")
        method, op = environ["REQUEST_METHOD"], environ["PATH_INFO"].removeprefix("/api/")
        if method == "POST" and not environ.get("CONTENT_TYPE", "").startswith("application/json"):
            return "415 Unsupported Media Type", error_grid(
                f"Unsupported media type: {environ.get('CONTENT_TYPE')}"
            )
        if op == "about":
            return "200 OK", grid([{"serverName": "s:werkzeug", "productName": "s:test"}])
        if op == "ops":
            return "200 OK", grid([{"name": f"s:{name}"} for name in OPS])
        if op == "formats":
            return "200 OK", grid([{"mime": "s:application/json", "receive": "m:", "send": "m:"}])
        if op == "read":
            return "200 OK", self.read(method, environ)
        return "404 Not Found", error_grid(f"Unknown op: {op}")

    def read(self, method: str, environ: dict[str, Any]) -> bytes:
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            rows = orjson.loads(environ["wsgi.input"].read(size)).get("rows") or [{}]
            expr, limit = str(rows[0].get("filter", "")), rows[0].get("limit")
        else:
            query = parse_qs(environ.get("QUERY_STRING", ""))
            expr, limit = query.get("filter", [""])[0], query.get("limit", [None])[0]
        expr = expr.removeprefix("s:")
        found = [matches(entity, expr) for entity in ENTITIES]
        if None in found:
            return error_grid(f"Cannot read filter {expr!r}")
        rows = [entity for entity, hit in zip(ENTITIES, found, strict=True) if hit]
        if limit is not None:
            rows = rows[: int(float(str(limit).removeprefix("n:").split()[0]))]
        return grid(rows)


@contextlib.contextmanager
def werkzeug_haystack() -> Iterator[tuple[str, WerkzeugHaystack]]:
    """The server on a free 127.0.0.1 port in a thread; yields its API URL and the app."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = WerkzeugHaystack()
    server: BaseWSGIServer = make_server("127.0.0.1", 0, app, threaded=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api", app
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
