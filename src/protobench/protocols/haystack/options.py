"""Options of the ``haystack`` protocol and the parameters of each operation.

Operation names are kebab-case Haystack ops; the same set prefixed ``ws-``
runs over the WebSocket API (``/api/ws``, ``haystack`` subprotocol) instead of
HTTP. ``auth`` is the SCRAM login itself, one full handshake per exchange.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from protobench.protocols.base import NoParams, StrictModel
from protobench.protocols.haystack.credentials import DEV_USER, PASSWORD_ENV
from protobench.protocols.http.client import MAX_BODY, MAX_HEAD, check_request
from protobench.vocab.fields import Size


def check_headers(headers: Mapping[str, str], content_type: str | None) -> None:
    """Raise ``ValueError`` for headers that would break framing or that options set."""
    check_request("GET", "/", headers)
    if content_type is not None:
        check_request("GET", "/", {"Content-Type": content_type})
    for name in headers:
        if name.lower() == "content-type":
            raise ValueError("set the Content-Type with the content_type option, not in headers")


class HaystackOptions(StrictModel):
    """Protocol-wide options (the profile's ``[options]``)."""

    user: str = Field(default=DEV_USER, description="account to log in as")
    password: SecretStr | None = Field(
        default=None,
        description="secret; unset: $password_env, else the embedded server's dev password",
    )
    password_env: str = Field(default=PASSWORD_ENV, description="env variable of the password")
    auth: bool = Field(default=True, description="false: no login, no Authorization header")
    auth_per: Literal["session", "worker"] = Field(
        default="session", description="one SCRAM login per session, or per worker process"
    )
    format: Literal["json", "zinc"] = Field(
        default="json", description="HTTP request/response format (WebSocket is always JSON)"
    )
    validation: Literal["meta", "grid", "decode"] = Field(
        default="meta",
        description="reply check: grid header (cheap), whole grid parsed, or decoded by hs_py",
    )
    content_type: str | None = Field(
        default=None,
        description="Content-Type of request bodies (default: the format's MIME type;"
        " charset=utf-8)",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="more headers on every HTTP request, the login and the WebSocket upgrade",
    )
    max_body_size: Size = Field(
        default=MAX_BODY,
        ge=1,
        description="the longest HTTP response body kept (a longer one is a protocol error)",
    )
    max_header_size: Size = Field(
        default=MAX_HEAD,
        ge=1,
        description="the longest HTTP response head (a longer one is a protocol error)",
    )
    ws_path: str = Field(default="/ws", description="WebSocket API path under the target URL")
    insecure: bool = Field(default=False, description="skip TLS certificate verification")
    ca_file: str | None = Field(default=None, description="PEM file of CAs to trust")

    @model_validator(mode="after")
    def _headers_frame(self) -> HaystackOptions:
        check_headers(self.headers, self.content_type)
        return self


class ReadParams(StrictModel):
    """``read``: filters cycled request by request."""

    filters: list[str] = Field(
        default_factory=lambda: ["site"], min_length=1, description="filters, cycled"
    )
    limit: int | None = Field(default=None, ge=1, description="row limit of each read")
    min_rows: int = Field(
        default=0,
        ge=0,
        description="fewer rows is a validation error (lifts validation meta to grid)",
    )


class NavParams(StrictModel):
    """``nav``: navIds cycled; ``""`` is the root (the sites)."""

    nav_ids: list[str] = Field(
        default_factory=lambda: [""], min_length=1, description='navIds, cycled ("" = root)'
    )


class PointParams(StrictModel):
    """Which points an op addresses: ``points``, else the first ``max_points`` of a filter."""

    points: list[str] = Field(default_factory=list, description="point ids (without @)")
    point_filter: str = Field(default="point and his", description="filter used without points")
    max_points: int = Field(default=50, ge=1, le=10_000, description="limit of point_filter")


class HisReadParams(PointParams):
    """``his-read``: one point per request, cycled, over ``range``."""

    range: str = Field(default="today", description="hisRead range")


class HisWriteParams(PointParams):
    """``his-write``: fresh samples (timestamped now) to one point per request."""

    samples: int = Field(default=1, ge=1, le=10_000, description="samples per request")


class PointWriteParams(PointParams):
    """``point-write``: ``values`` in turn at ``level``, one point per request."""

    point_filter: str = Field(
        default='point and writable and kind=="Number"', description="filter used without points"
    )
    level: int = Field(default=16, ge=1, le=17, description="priority level")
    values: list[float] = Field(
        default_factory=lambda: [72.5, 68.0], min_length=1, description="values, cycled"
    )
    who: str = Field(default="protobench", description="who tag of the writes")


class WatchParams(PointParams):
    """``watch-sub``/``watch-poll``: a watch of ``max_points`` points opened per session.

    ``watch-sub`` re-subscribes those points to the session's watch on each
    request; ``watch-poll`` polls it. The watch is closed when the session ends.
    """

    max_points: int = Field(default=20, ge=1, le=10_000, description="points in the watch")
    refresh: bool = Field(default=False, description="watch-poll: every point, not only changes")


_HTTP_OPS: Mapping[str, type[StrictModel]] = {
    "about": NoParams,
    "ops": NoParams,
    "read": ReadParams,
    "nav": NavParams,
    "his-read": HisReadParams,
    "his-write": HisWriteParams,
    "point-write": PointWriteParams,
    "watch-sub": WatchParams,
    "watch-poll": WatchParams,
}

OPERATIONS: Mapping[str, type[StrictModel]] = {
    "auth": NoParams,
    **_HTTP_OPS,
    **{f"ws-{name}": model for name, model in _HTTP_OPS.items()},
}

HAYSTACK_OP: Mapping[str, str] = {
    "about": "about",
    "ops": "ops",
    "read": "read",
    "nav": "nav",
    "his-read": "hisRead",
    "his-write": "hisWrite",
    "point-write": "pointWrite",
    "watch-sub": "watchSub",
    "watch-poll": "watchPoll",
}
"""protobench op name (without ``ws-``) to the Haystack op name."""
