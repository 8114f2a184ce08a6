"""What each Haystack op sends: request grids, and their HTTP and WebSocket encodings.

:func:`request_grids` gives the cycle of ``(method, haystack op, grid)`` a
session repeats (one entry per filter, point, navId...); his-write is the one
op whose body changes per request (fresh timestamps) and is built by
:func:`his_write_grid`. :func:`http_request` and :func:`ws_template` turn a
grid into the bytes of one HTTP request or the text of one WebSocket message
(with a ``%d`` slot for the request id).
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass
from typing import Any

import orjson
from hs_py.grid import Grid, GridBuilder
from hs_py.kinds import Number, Ref

from protobench.protocols.base import StrictModel
from protobench.protocols.haystack.grids import (
    MIME,
    Format,
    encode,
    encode_json,
    rows_grid,
    watch_meta,
)
from protobench.protocols.haystack.options import (
    HAYSTACK_OP,
    HaystackOptions,
    HisReadParams,
    NavParams,
    PointWriteParams,
    ReadParams,
    WatchParams,
)
from protobench.protocols.haystack.scram import bearer
from protobench.protocols.http.client import Endpoint, build_request

Request = tuple[str, str, Grid | None]
"""``(HTTP method, Haystack op name, request grid or None)``."""


def request_grids(
    op: str, params: StrictModel, points: list[str], watch_id: str | None = None
) -> list[Request]:
    """The requests ``op`` cycles through (``op`` without the ``ws-`` prefix)."""
    hop = HAYSTACK_OP[op]
    if op in ("about", "ops"):
        return [("GET", hop, None)]
    if isinstance(params, ReadParams):
        return [("POST", hop, rows_grid([_filter_row(f, params.limit)])) for f in params.filters]
    if isinstance(params, NavParams):
        return [("POST", hop, rows_grid([{"navId": Ref(n)} if n else {}])) for n in params.nav_ids]
    if isinstance(params, HisReadParams):
        return [("POST", hop, rows_grid([{"id": Ref(p), "range": params.range}])) for p in points]
    if isinstance(params, PointWriteParams):
        return [
            (
                "POST",
                hop,
                rows_grid(
                    [
                        {
                            "id": Ref(p),
                            "level": Number(params.level),
                            "val": Number(v),
                            "who": params.who,
                        }
                    ]
                ),
            )
            for p in points
            for v in params.values
        ]
    if isinstance(params, WatchParams) and op == "watch-sub":
        return [("POST", hop, watch_sub_grid(points, watch_id))]
    if isinstance(params, WatchParams) and op == "watch-poll":
        meta = watch_meta(watch_id, refresh=True) if params.refresh else watch_meta(watch_id)
        return [("POST", hop, Grid(meta=meta))]
    raise ValueError(f"haystack op {op!r} has no static requests")


def watch_sub_grid(points: list[str], watch_id: str | None) -> Grid:
    """A watchSub of ``points``: a new watch, or more of ``watch_id``."""
    return rows_grid(
        [{"id": Ref(p)} for p in points], {**watch_meta(watch_id), "lease": Number(300.0, "s")}
    )


def watch_close_grid(watch_id: str) -> Grid:
    """The watchUnsub that closes ``watch_id``."""
    return Grid(meta=watch_meta(watch_id, close=True))


def his_write_grid(point: str, samples: int, rng: random.Random) -> Grid:
    """``samples`` samples ending now, one second apart, for ``point``."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    builder = GridBuilder().set_meta({"id": Ref(point)}).add_col("ts").add_col("val")
    for i in range(samples):
        builder.add_row(
            {
                "ts": now - datetime.timedelta(seconds=samples - 1 - i),
                "val": Number(round(rng.gauss(72.0, 2.0), 2), "°F"),
            }
        )
    return builder.to_grid()


@dataclass(frozen=True)
class Framing:
    """What an HTTP request carries besides its grid: the format, the body's type, more headers.

    ``content_type`` ``None`` is the format's MIME type with ``charset=utf-8``;
    some servers refuse the parameter, so a profile can give its own.
    """

    fmt: Format = "json"
    content_type: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, options: HaystackOptions) -> Framing:
        """The framing of a profile's options."""
        return cls(options.format, options.content_type, tuple(options.headers.items()))


def http_request(
    endpoint: Endpoint, request: Request, framing: Framing, token: str | None
) -> bytes:
    """One pre-encoded HTTP request; ``token`` adds ``Authorization: BEARER``."""
    method, hop, grid = request
    fmt = framing.fmt
    headers = [("Accept", MIME[fmt]), *framing.headers]
    if token is not None:
        headers.append(("Authorization", bearer(token)))
    if grid is None:
        return build_request(method, endpoint, f"/{hop}", headers)
    headers.append(("Content-Type", framing.content_type or f"{MIME[fmt]}; charset=utf-8"))
    return build_request(method, endpoint, f"/{hop}", headers, encode(grid, fmt))


def ws_template(request: Request) -> str:
    """The WebSocket message of ``request`` with a ``%d`` slot for its id."""
    _, hop, grid = request
    envelope: dict[str, Any] = {"op": hop}
    text = orjson.dumps(envelope).decode()[:-1]
    if grid is not None:
        text += ',"grid":' + encode_json(grid).decode()
    return text.replace("%", "%%") + ',"id":%d}'


def _filter_row(expr: str, limit: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {"filter": expr}
    if limit is not None:
        row["limit"] = Number(float(limit))
    return row
