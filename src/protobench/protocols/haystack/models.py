"""Options of the ``haystack`` protocol and the parameters of each operation.

Operation names are kebab-case Haystack ops; the same set prefixed ``ws-``
runs over the WebSocket API (``/api/ws``, ``haystack`` subprotocol) instead of
HTTP. ``auth`` is the SCRAM login itself, one full handshake per exchange.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field, SecretStr

from protobench.protocols.base import NoParams, StrictModel
from protobench.protocols.haystack.credentials import DEV_USER, PASSWORD_ENV


class HaystackOptions(StrictModel):
    """Protocol-wide options (the profile's ``[options]``)."""

    user: str = DEV_USER
    password: SecretStr | None = None
    """Secret. Unset: ``$password_env``, else the embedded server's dev password."""
    password_env: str = PASSWORD_ENV
    auth: bool = True
    """``false`` for a server without authentication (no Authorization header)."""
    auth_per: Literal["session", "worker"] = "session"
    """One SCRAM login per session, or one per worker process shared by its sessions."""
    format: Literal["json", "zinc"] = "json"
    """Wire format of HTTP requests and responses (WebSocket is always JSON)."""
    validation: Literal["grid", "decode"] = "grid"
    """``grid``: well-formed grid, error grids; ``decode``: full decode with hs_py's codecs."""
    ws_path: str = "/ws"
    """Path of the WebSocket API under the target URL."""
    insecure: bool = False
    ca_file: str | None = None


class ReadParams(StrictModel):
    """``read``: filters cycled request by request (so a read cache cannot answer all)."""

    filters: list[str] = Field(default_factory=lambda: ["site"], min_length=1)
    limit: int | None = Field(default=None, ge=1)
    min_rows: int = Field(default=0, ge=0)
    """A reply with fewer rows is a ``validation`` error."""


class NavParams(StrictModel):
    """``nav``: navIds cycled; ``""`` is the root (the sites)."""

    nav_ids: list[str] = Field(default_factory=lambda: [""], min_length=1)


class PointParams(StrictModel):
    """Which points an op addresses: ``points`` ids, else the first ``max_points`` of a filter."""

    points: list[str] = Field(default_factory=list)
    point_filter: str = "point and his"
    max_points: int = Field(default=50, ge=1, le=10_000)


class HisReadParams(PointParams):
    """``his-read``: one point per request, cycled, over ``range``."""

    range: str = "today"


class HisWriteParams(PointParams):
    """``his-write``: ``samples`` fresh samples (timestamped now) to one point per request."""

    samples: int = Field(default=1, ge=1, le=10_000)


class PointWriteParams(PointParams):
    """``point-write``: alternately ``values`` at ``level`` to one point per request."""

    point_filter: str = 'point and writable and kind=="Number"'
    level: int = Field(default=16, ge=1, le=17)
    values: list[float] = Field(default_factory=lambda: [72.5, 68.0], min_length=1)
    who: str = "protobench"


class WatchParams(PointParams):
    """``watch-sub``/``watch-poll``: a watch of ``max_points`` points opened per session.

    ``watch-sub`` re-subscribes those points to the session's watch on each
    request; ``watch-poll`` polls it (``refresh`` asks for every point, not
    only the changed ones). The watch is closed when the session ends.
    """

    max_points: int = Field(default=20, ge=1, le=10_000)
    refresh: bool = False


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
