"""Haystack request grids and response validation (pure: no I/O, no clock).

Requests are encoded with hs_py's codecs in the session's format (JSON or
Zinc), each grid with its version (``ver:"3.0"``: Zinc's first line, JSON's
``meta.ver``, which servers that validate Hayson require). Responses are
checked at one of three depths:

``meta`` (default)
    the grid's header: JSON starts with the grid object whose first key
    (after ``_kind``) is ``meta``, which is parsed, and has ``rows``; Zinc
    starts with a ``ver:`` line. Costs microseconds whatever the size of the
    grid (reading 3,000 points is a 1.7 MB grid that takes orjson ~25 ms to
    parse on this machine: a generator that parses every reply measures
    itself). The row count is unknown (``-1``). A JSON grid whose keys come
    in another order is parsed in full.
``grid``
    the body is a well-formed grid: JSON parses (orjson) to an object with a
    ``meta`` object and ``cols``/``rows`` arrays; Zinc starts with a ``ver:``
    line followed by a column line; rows are counted.
``decode``
    the whole grid is decoded into Haystack values with hs_py's codecs
    (``hs_py.encoding.json.decode_grid`` / ``hs_py.encoding.zinc.decode_grid``).
    Costs as much CPU as a real client spends per response.

At every depth, an error grid (``err`` in its meta) is a ``protocol`` error whose
detail is the grid's ``dis`` (:func:`error_dis`: decoded, also from Haystack 3
JSON, whose strings carry a ``s:`` prefix); a body that is not a grid, or not
in the format asked for, is a ``validation`` error. :func:`error_text` gives
what a refusal (a non-200 reply) says: its error grid's ``dis``, else the
start of its body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

import orjson
from hs_py.encoding import json as hs_json
from hs_py.encoding import zinc as hs_zinc
from hs_py.grid import Grid
from hs_py.kinds import MARKER

from protobench.vocab.errors import ErrorClass, OpError

Format = Literal["json", "zinc"]
Depth = Literal["meta", "grid", "decode"]

MIME: Mapping[Format, str] = {"json": "application/json", "zinc": "text/zinc"}
ERROR_CODE = "error-grid"
V3_MARKER = "m:"
"""A marker in Haystack 3 JSON."""
_V3_KINDS = frozenset("mz-snryhdtucx")
"""The type prefixes of Haystack 3 JSON strings (``s:`` a string, ``r:`` a ref...)."""
_SAMPLE_ROWS = 8
"""Rows :func:`json_version` looks at."""
UNKNOWN_ROWS = -1
_JSON_HEAD = re.compile(rb'\s*\{\s*(?:"_kind"\s*:\s*"grid"\s*,\s*)?"meta"\s*:\s*')
_DECODER = json.JSONDecoder()
_META_WINDOW = 4096


VERSION = "3.0"
"""The grid format version every request grid carries (Haystack 3 and 4 both write 3.0)."""


def encode_json(grid: Grid) -> bytes:
    """``grid`` as Haystack 4 JSON (Hayson) with ``meta.ver`` (hs_py's encoder leaves it out)."""
    versioned = Grid(meta={"ver": VERSION, **grid.meta}, cols=grid.cols, rows=grid.rows)
    return bytes(hs_json.encode_grid(versioned))


def encode(grid: Grid, fmt: Format) -> bytes:
    """``grid`` in the wire format ``fmt`` (Zinc's encoder writes the ``ver`` line itself)."""
    if fmt == "json":
        return encode_json(grid)
    return str(hs_zinc.encode_grid(grid)).encode("utf-8")


def json_version(obj: Any) -> hs_json.JsonVersion:
    """The Haystack JSON version a parsed grid is written in.

    Haystack 3 JSON writes values as strings with a type prefix (``"m:"``,
    ``"r:s1 Site"``, ``"n:72 °F"``, ``"t:2024-01-01T00:00:00Z UTC"``); Haystack 4
    (Hayson) writes those as objects with a ``_kind``. A grid whose meta or first
    rows hold a prefixed string and no ``_kind`` object is version 3.
    """
    values: list[Any] = []
    if isinstance(obj, dict):
        meta, rows = obj.get("meta"), obj.get("rows")
        if isinstance(meta, dict):
            values += meta.values()
        if isinstance(rows, list):
            values += [
                v for row in rows[:_SAMPLE_ROWS] if isinstance(row, dict) for v in row.values()
            ]
    prefixed = any(
        isinstance(v, str) and len(v) >= 2 and v[1] == ":" and v[0] in _V3_KINDS for v in values
    )
    kinds = any(isinstance(v, dict) and "_kind" in v for v in values)
    return hs_json.JsonVersion.V3 if prefixed and not kinds else hs_json.JsonVersion.V4


def _v3_prefixed(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= 2 and value[1] == ":" and value[0] in _V3_KINDS


def decode_json(body: bytes) -> Grid:
    """A JSON grid decoded in full by hs_py, in the version it is written in
    (:func:`json_version`); ``ValueError`` (or hs_py's error) when it is not one."""
    obj = orjson.loads(body)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON grid object")
    return hs_json.decode_grid_dict(obj, version=json_version(obj))


def error_dis(meta: Mapping[str, Any]) -> str:
    """The ``dis`` of an error grid's meta as text, ``""`` without one.

    Haystack 3 JSON writes every value as a string with a type prefix
    (``"err": "m:"``, ``"dis": "s:Error"``); a meta whose ``err`` is so written
    has its ``dis`` decoded the same way (hs_py's Haystack 3 decoder). Haystack 4
    JSON (Hayson) and Zinc strings are plain.
    """
    dis = meta.get("dis")
    if isinstance(dis, str) and meta.get("err") == V3_MARKER:
        dis = hs_json.decode_val(dis, version=hs_json.JsonVersion.V3)
    return dis if isinstance(dis, str) else ""


def error_text(body: bytes, limit: int = 200) -> str:
    """What a refusal says: the ``dis`` of the error grid in ``body`` (JSON or Zinc), else
    the start of ``body`` as text (``""`` when empty)."""
    dis: object = None
    text = body.decode("utf-8", "replace")
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        if text.startswith("ver:"):
            try:
                dis = hs_zinc.decode_grid(text).meta.get("dis")
            except Exception:  # not a grid after all: quote the text
                dis = None
    else:
        if isinstance(obj, dict):
            meta = obj.get("meta")
            dis = error_dis(meta) if isinstance(meta, dict) else obj.get("error")
    if isinstance(dis, str) and dis:
        return dis[:limit]
    return " ".join(text.split())[:limit]


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
        if depth == "meta":
            return check_json_meta(body)
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise OpError(ErrorClass.VALIDATION, f"response is not JSON: {exc}") from None
        return check_json_decoded(obj) if depth == "decode" else check_json_grid(obj)
    rows = _check_zinc(body, count_rows=depth != "meta")
    if depth == "decode":
        _decode(hs_zinc.decode_grid, _utf8(body))
    return rows


def check_json_grid(obj: Any) -> int:
    """Validate a parsed JSON grid (also the ``grid`` of a WebSocket reply); count its rows."""
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
        raise OpError(ErrorClass.PROTOCOL, error_dis(meta) or "error grid", code=ERROR_CODE)
    return len(rows)


def _check_json_meta(body: bytes, start: int) -> int:
    """The meta object at ``body[start:]`` (parsed alone) and the grid's outline."""
    window = _META_WINDOW
    while True:
        chunk = body[start : start + window].decode("utf-8", "ignore")
        try:
            meta, _ = _DECODER.raw_decode(chunk)
            break
        except json.JSONDecodeError:
            if start + window >= len(body):
                raise OpError(ErrorClass.VALIDATION, "response is not a JSON grid") from None
            window *= 4
    if not isinstance(meta, dict) or b'"rows"' not in body or not body.rstrip().endswith(b"}"):
        raise OpError(ErrorClass.VALIDATION, "response is not a grid (meta, cols, rows)")
    if "err" in meta:
        raise OpError(ErrorClass.PROTOCOL, error_dis(meta) or "error grid", code=ERROR_CODE)
    return UNKNOWN_ROWS


def check_json_decoded(obj: Any) -> int:
    """:func:`check_json_grid`, then every value decoded by hs_py (``decode`` depth)."""
    rows = check_json_grid(obj)
    _decode(hs_json.decode_grid_dict, obj)
    return rows


def check_json_meta(body: bytes) -> int:
    """``meta`` depth for a JSON grid; grids with another key order are parsed in full."""
    head = _JSON_HEAD.match(body)
    if head is None:
        try:
            return check_json_grid(orjson.loads(body))
        except orjson.JSONDecodeError as exc:
            raise OpError(ErrorClass.VALIDATION, f"response is not JSON: {exc}") from None
    return _check_json_meta(body, head.end())


def _check_zinc(body: bytes, *, count_rows: bool) -> int:
    end = body.find(b"\n")
    head = _utf8(body[:end] if end >= 0 else body)
    if end < 0 or not head.startswith("ver:") or not body[end:].strip():
        raise OpError(ErrorClass.VALIDATION, "response is not a Zinc grid (no ver: line)")
    if " err" in head:
        return _check_decoded(_decode(hs_zinc.decode_grid, _utf8(body)))
    if not count_rows:
        return UNKNOWN_ROWS
    lines = [line for line in _utf8(body[end + 1 :]).split("\n") if line.strip()]
    return 0 if lines[0].strip() == "empty" else len(lines) - 1


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise OpError(ErrorClass.VALIDATION, "Zinc response is not UTF-8") from None


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
        raise OpError(ErrorClass.PROTOCOL, error_dis(grid.meta) or "error grid", code=ERROR_CODE)
    return len(grid.rows)
