"""Haystack reply validation at every depth, request building and SCRAM header parsing."""

from __future__ import annotations

import orjson
import pytest
from hs_py.encoding import json as hs_json
from hs_py.encoding import zinc as hs_zinc
from hs_py.grid import Grid
from hs_py.kinds import MARKER, Number, Ref

from protobench.protocols.base import SessionContext
from protobench.protocols.haystack.grids import (
    UNKNOWN_ROWS,
    check,
    check_json_grid,
    decode_json,
    error_text,
    json_version,
)
from protobench.protocols.haystack.options import (
    HisReadParams,
    NavParams,
    PointWriteParams,
    ReadParams,
    WatchParams,
)
from protobench.protocols.haystack.plugin import HaystackProtocol
from protobench.protocols.haystack.requests import (
    Framing,
    http_request,
    request_grids,
    ws_template,
)
from protobench.protocols.haystack.scram import b64url, b64url_decode, header_params
from protobench.protocols.haystack.sessions.http import refusal
from protobench.protocols.http.client import Response, parse_url
from protobench.vocab.errors import ErrorClass, OpError

ROWS = [
    {"id": Ref(f"p{i}"), "dis": f"Point {i}", "curVal": Number(float(i), "°F")} for i in range(5)
]
GRID = Grid.make_rows(ROWS)
ERROR = Grid.make_error("invalid filter: Expected IDENT")
JSON = b"application/json; charset=utf-8"
ZINC = b"text/zinc; charset=utf-8"


def _body(grid: Grid, fmt: str) -> bytes:
    if fmt == "json":
        return bytes(hs_json.encode_grid(grid))
    return str(hs_zinc.encode_grid(grid)).encode()


@pytest.mark.parametrize(
    ("fmt", "depth", "rows"),
    [
        ("json", "meta", UNKNOWN_ROWS),
        ("json", "grid", 5),
        ("json", "decode", 5),
        ("zinc", "meta", UNKNOWN_ROWS),
        ("zinc", "grid", 5),
        ("zinc", "decode", 5),
    ],
)
def test_valid_grids(fmt: str, depth: str, rows: int) -> None:
    content_type = JSON if fmt == "json" else ZINC
    assert check(_body(GRID, fmt), content_type, fmt, depth) == rows  # type: ignore[arg-type]
    empty = check(_body(Grid.make_empty(), fmt), content_type, fmt, depth)  # type: ignore[arg-type]
    assert empty in (0, UNKNOWN_ROWS)


@pytest.mark.parametrize("fmt", ["json", "zinc"])
@pytest.mark.parametrize("depth", ["meta", "grid", "decode"])
def test_error_grid_is_protocol_with_its_dis(fmt: str, depth: str) -> None:
    content_type = JSON if fmt == "json" else ZINC
    with pytest.raises(OpError) as raised:
        check(_body(ERROR, fmt), content_type, fmt, depth)  # type: ignore[arg-type]
    assert raised.value.error_class is ErrorClass.PROTOCOL
    assert raised.value.detail == "invalid filter: Expected IDENT"
    assert raised.value.code == "error-grid"


@pytest.mark.parametrize("depth", ["meta", "grid", "decode"])
@pytest.mark.parametrize(
    "body",
    [b"<html>oops</html>", b'{"rows": []}', b'{"meta": []}', b"[]"],
)
def test_not_a_json_grid_is_validation(body: bytes, depth: str) -> None:
    with pytest.raises(OpError) as raised:
        check(body, JSON, "json", depth)  # type: ignore[arg-type]
    assert raised.value.error_class is ErrorClass.VALIDATION


def test_meta_depth_reads_only_the_header() -> None:
    body = b'{"meta": {}, "cols": 3, "rows": []}'
    assert check(body, JSON, "json", "meta") == UNKNOWN_ROWS
    with pytest.raises(OpError, match="not a grid"):
        check(body, JSON, "json", "grid")


@pytest.mark.parametrize("depth", ["meta", "grid", "decode"])
@pytest.mark.parametrize("body", [b"hello", b'ver:"3.0"', b'\xff\nver:"3.0"'])
def test_not_a_zinc_grid_is_validation(body: bytes, depth: str) -> None:
    with pytest.raises(OpError) as raised:
        check(body, ZINC, "zinc", depth)  # type: ignore[arg-type]
    assert raised.value.error_class is ErrorClass.VALIDATION


@pytest.mark.parametrize("depth", ["grid", "decode"])
def test_zinc_rows_that_are_not_utf8_are_validation(depth: str) -> None:
    with pytest.raises(OpError, match="not UTF-8"):
        check(b'ver:"3.0"\nx\n\xff', ZINC, "zinc", depth)  # type: ignore[arg-type]


def test_wrong_content_type_is_validation() -> None:
    with pytest.raises(OpError, match="expected text/zinc"):
        check(_body(GRID, "json"), JSON, "zinc", "meta")
    with pytest.raises(OpError, match="got content type none"):
        check(_body(GRID, "json"), None, "json", "meta")


def test_meta_depth_handles_other_key_orders_and_big_meta() -> None:
    reordered = orjson.dumps({"rows": [{"a": 1}], "cols": [{"name": "a"}], "meta": {"err": {}}})
    with pytest.raises(OpError, match="error grid"):
        check(reordered, JSON, "json", "meta")
    big_meta = {"_kind": "grid", "meta": {"note": "x" * 20_000, "err": {}, "dis": "late err"}}
    with pytest.raises(OpError, match="late err"):
        check(orjson.dumps({**big_meta, "cols": [], "rows": []}), JSON, "json", "meta")


def test_check_json_grid_counts_rows() -> None:
    assert check_json_grid(orjson.loads(_body(GRID, "json"))) == 5


def test_request_grids_per_op() -> None:
    reads = request_grids("read", ReadParams(filters=["site", "point"], limit=3), [])
    assert [(m, op) for m, op, _ in reads] == [("POST", "read"), ("POST", "read")]
    assert reads[1][2] is not None
    assert reads[1][2].rows[0] == {"filter": "point", "limit": Number(3.0)}
    navs = request_grids("nav", NavParams(nav_ids=["", "s1"]), [])
    assert navs[0][2] is not None
    assert navs[0][2].rows[0] == {}
    assert navs[1][2] is not None
    assert navs[1][2].rows[0] == {"navId": Ref("s1")}
    his = request_grids("his-read", HisReadParams(range="yesterday"), ["a", "b"])
    assert [g.rows[0]["id"].val for _, _, g in his if g is not None] == ["a", "b"]
    writes = request_grids("point-write", PointWriteParams(values=[1.0, 2.0]), ["a"])
    assert len(writes) == 2
    poll = request_grids("watch-poll", WatchParams(refresh=True), ["a"], "w-1")[0][2]
    assert poll is not None
    assert poll.meta["watchId"] == "w-1"
    assert "refresh" in poll.meta
    assert request_grids("about", ReadParams(), []) == [("GET", "about", None)]


def test_http_request_carries_format_and_bearer() -> None:
    endpoint = parse_url("http://127.0.0.1:8080/api")
    request = request_grids("read", ReadParams(), [])[0]
    raw = http_request(endpoint, request, Framing("zinc"), "tok123")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /api/read HTTP/1.1\r\n")
    assert b"Accept: text/zinc" in head
    assert b"Authorization: BEARER authToken=tok123" in head
    assert body.startswith(b'ver:"3.0"')
    assert b"Authorization" not in http_request(endpoint, ("GET", "about", None), Framing(), None)


def test_ws_template_fills_the_id_and_keeps_percent_signs() -> None:
    request = request_grids("read", ReadParams(filters=['dis == "50%"']), [])[0]
    message = orjson.loads(ws_template(request) % 42)
    assert message["op"] == "read"
    assert message["id"] == 42
    assert message["grid"]["rows"][0]["filter"] == 'dis == "50%"'
    assert orjson.loads(ws_template(("GET", "about", None)) % 1) == {"op": "about", "id": 1}


def test_scram_header_helpers() -> None:
    assert b64url_decode(b64url(b"user,=name")) == b"user,=name"
    assert "=" not in b64url(b"ab")
    assert header_params("SCRAM hash=SHA-256, handshakeToken=abc") == {
        "hash": "SHA-256",
        "handshakeToken": "abc",
    }
    assert header_params("authToken=t1, data=xyz") == {"authToken": "t1", "data": "xyz"}


def test_password_is_redacted_and_not_in_the_options_repr() -> None:
    plugin = HaystackProtocol()
    assert plugin.redact({"password": "hunter2", "user": "u"}) == {
        "password": "<secret>",
        "user": "u",
    }
    ctx_options = plugin.options(password="hunter2")  # type: ignore[call-arg]
    assert "hunter2" not in repr(ctx_options)
    assert "hunter2" not in repr(
        SessionContext("http://x", "g", "about", 0, 0, ReadParams(), ctx_options, 1.0)
    )


V3_ERROR = b'{"meta":{"ver":"3.0","err":"m:","dis":"s:Error: no such op"},"cols":[],"rows":[]}'


@pytest.mark.parametrize("depth", ["meta", "grid", "decode"])
def test_a_haystack_3_error_grid_says_its_dis_without_the_type_prefix(depth: str) -> None:
    with pytest.raises(OpError) as caught:
        check(V3_ERROR, b"application/json", "json", depth)  # type: ignore[arg-type]
    assert caught.value.detail == "Error: no such op"
    assert error_text(V3_ERROR) == "Error: no such op"
    hayson = b'{"meta":{"ver":"3.0","err":{"_kind":"marker"},"dis":"s:as written"},"rows":[]}'
    assert error_text(hayson) == "s:as written", "a Haystack 4 string is plain"


def test_json_grids_decode_in_the_version_they_are_written_in() -> None:
    v3 = (
        b'{"meta":{"ver":"3.0"},"cols":[{"name":"id"},{"name":"site"}],'
        b'"rows":[{"id":"r:s1 Site","site":"m:"}]}'
    )
    [row] = decode_json(v3).rows
    assert (row["id"].val, row["id"].dis, row["site"]) == ("s1", "Site", MARKER)
    assert json_version(orjson.loads(v3)) == hs_json.JsonVersion.V3
    v4 = hs_json.encode_grid(Grid.make_rows([{"id": Ref("s1", "Site"), "site": MARKER}]))
    assert json_version(orjson.loads(v4)) == hs_json.JsonVersion.V4
    assert decode_json(v4).rows[0]["id"].val == "s1"


@pytest.mark.parametrize(("status", "hinted"), [(406, True), (415, True), (400, False)])
def test_a_refused_media_type_names_the_options_that_change_it(status: int, hinted: bool) -> None:
    headers = [(b"content-type", b"application/json")]
    response = Response(status, "", headers, V3_ERROR, len(V3_ERROR))
    error = refusal(response, "read")
    assert error.code == str(status)
    assert error.detail.startswith("read: Error: no such op")
    assert ("the content_type option sets the Content-Type" in error.detail) is hinted
