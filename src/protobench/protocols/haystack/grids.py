"""Haystack request grids and response validation (pure: no I/O, no clock).

Requests are encoded with hs_py's codecs in the session's format (JSON or
Zinc). Responses are checked in one of two depths:

``grid`` (default)
    the body is a well-formed grid: JSON parses (orjson) to an object with a
    ``meta`` object and ``cols``/``rows`` arrays; Zinc starts with a ``ver:``
    line followed by a column line. Fast enough for a load generator.
``decode``
    the whole grid is decoded into Haystack values with hs_py's codecs
    (``hs_py.encoding.json.decode_grid`` / ``hs_py.encoding.zinc.decode_grid``).
    Costs as much CPU as a real client spends per response.

In both, an error grid (``err`` in its meta) is a ``protocol`` error whose
detail is the grid's ``dis``; a body that is not a grid, or not in the format
asked for, is a ``validation`` error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from hs_py.encoding import json as hs_json
from hs_py.encoding import zinc as hs_zinc
from hs_py.grid import Grid
from hs_py.kinds import MARKER

from protobench.protocols.base import ErrorClass, OpError

Format = Literal["json", "zinc"]
Depth = Literal["grid", "decode"]

MIME: Mapping[Format, str] = {"json": "application/json", "zinc": "text/zinc"}
ERROR_CODE = "error-grid"


def encode(grid: Grid, fmt: Format) -> bytes:
    """``grid`` in the wire format ``fmt``."""
    if fmt == "json":
        return bytes(hs_json.encode_grid(grid))
    return str(hs_zinc.encode_grid(grid)).encode("utf-8")


def rows_grid(rows: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> Grid:
    """A request grid of ``rows`` (columns inferred) with optional ``meta``."""
    grid = Grid.make_rows(rows) if rows else Grid.make_empty()
    if meta:
        return Grid(meta={**grid.meta, **meta}, cols=grid.cols, rows=grid.rows)
    return grid


def watch_meta(watch_id: str | None, **extra: Any) -> dict[str, Any]:
    """Meta of a watch request (markers given as ``name=True``)."""
    meta: dict[str, Any] = {"watchDis": "protobench"} if watch_id is None else {"watchId": watch_id}
    meta.update({k: MARKER if v is True else v for k, v in extra.items()})
    return meta


def check(body: bytes, content_type: bytes | None, fmt: Format, depth: Depth) -> int:
    """Validate a response body; return its row count or raise :class:`OpError`."""
    expected = MIME[fmt]
    if content_type is None or not content_type.decode("latin-1").startswith(expected):
        got = content_type.decode("latin-1") if content_type else "none"
        raise OpError(ErrorClass.VALIDATION, f"expected {expected}, got content type {got}")
    if fmt == "json":
        if depth == "decode":
            return _check_decoded(_decode(hs_json.decode_grid, body))
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise OpError(ErrorClass.VALIDATION, f"response is not JSON: {exc}") from None
        return check_json_grid(obj)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise OpError(ErrorClass.VALIDATION, "Zinc response is not UTF-8") from None
    if depth == "decode":
        return _check_decoded(_decode(hs_zinc.decode_grid, text))
    return _check_zinc(text)


def check_json_grid(obj: Any) -> int:
    """Validate a parsed JSON grid (also the ``grid`` of a WebSocket reply)."""
    if not isinstance(obj, dict):
        raise OpError(ErrorClass.VALIDATION, "response is not a JSON grid object")
    meta, cols, rows = obj.get("meta"), obj.get("cols"), obj.get("rows")
    if (
        obj.get("_kind", "grid") != "grid"
        or not isinstance(meta, dict)
        or not isinstance(cols, list)
        or not isinstance(rows, list)
    ):
        raise OpError(ErrorClass.VALIDATION, "response is not a grid (meta, cols, rows)")
    if "err" in meta:
        dis = meta.get("dis")
        raise OpError(ErrorClass.PROTOCOL, str(dis or "error grid"), code=ERROR_CODE)
    return len(rows)


def _check_zinc(text: str) -> int:
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2 or not lines[0].startswith("ver:"):
        raise OpError(ErrorClass.VALIDATION, "response is not a Zinc grid (no ver: line)")
    if " err" in lines[0]:
        return _check_decoded(_decode(hs_zinc.decode_grid, text))
    return 0 if lines[1].strip() == "empty" else len(lines) - 2


def _decode(decoder: Any, data: Any) -> Grid:
    try:
        grid = decoder(data)
    except Exception as exc:
        raise OpError(ErrorClass.VALIDATION, f"undecodable grid: {exc}") from None
    if not isinstance(grid, Grid):
        raise OpError(ErrorClass.VALIDATION, "undecodable grid")
    return grid


def _check_decoded(grid: Grid) -> int:
    if grid.is_error:
        raise OpError(
            ErrorClass.PROTOCOL, str(grid.meta.get("dis") or "error grid"), code=ERROR_CODE
        )
    return len(grid.rows)
