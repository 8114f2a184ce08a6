"""Options of the ``http`` protocol and the parameters of its one op, ``request``.

Options: ``insecure`` (skip TLS verification), ``ca_file``, ``cert_file`` and
``key_file`` (mutual TLS), ``secret_headers`` (header names whose values are
never stored or printed, in addition to names that look like credentials),
``connect_to`` (connect to another address than the URL's; ``Host`` and the TLS
name stay the URL's), ``keepalive`` (false: every request on a new
connection, with ``Connection: close``), ``max_header_size`` (the longest
response head, 64 KiB by default; a longer one is a ``protocol`` error and the
connection is closed), ``version`` (``"1.1"``; ``"2"``: HTTP/2
by ALPN over ``https``, with prior knowledge over ``http``; ``"h2c"``: HTTP/2 in
cleartext only) and ``fallback`` (HTTP/2 over TLS may fall back to HTTP/1.1
when the server's ALPN chooses it). The parameters' ``streams`` (HTTP/2:
sessions per connection) is checked against them when the plan is made
(:func:`connection_share`); ``headers_file`` is read by :func:`read_headers`.
The one-line runs' flags (``protobench run URL -H ...``) that set these keys
are :mod:`.flags`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from protobench.protocols.base import StrictModel, overrides_applied
from protobench.protocols.http.client import MAX_HEAD, check_relative_path, check_request
from protobench.protocols.http.flags import CONNECT_TO, connect_target
from protobench.protocols.http.h2.headers import FORBIDDEN
from protobench.vocab.fields import Size

MAX_STREAMS = 10_000
"""The most ``streams`` per connection (servers allow 100 to 1,000)."""


class HttpOptions(StrictModel):
    """Protocol-wide options of ``http`` (the profile's ``[options]`` table)."""

    insecure: bool = Field(default=False, description="skip TLS certificate verification")
    ca_file: str | None = Field(default=None, description="PEM file of CAs to trust")
    cert_file: str | None = Field(default=None, description="client certificate (PEM)")
    key_file: str | None = Field(default=None, description="client certificate's key (PEM)")
    secret_headers: list[str] = Field(
        default_factory=list,
        description="more headers whose values are never stored or printed",
    )
    connect_to: str | None = Field(
        default=None,
        description=f"connect to this address instead of the URL's ({CONNECT_TO}); the Host"
        " header and the TLS name stay the URL's",
    )
    keepalive: bool = Field(
        default=True,
        description="false: every request on a new connection (Connection: close)",
    )
    max_header_size: Size = Field(
        default=MAX_HEAD,
        ge=1,
        description="the longest response head (a longer one is a protocol error)",
    )
    version: Literal["1.1", "2", "h2c"] = Field(
        default="1.1",
        description='HTTP version: "1.1"; "2" (h2 by ALPN over https, h2c with prior'
        ' knowledge over http); "h2c" (cleartext HTTP/2 only)',
    )
    fallback: bool = Field(
        default=False,
        description="with version 2 over https: use HTTP/1.1 when the server's ALPN chooses it",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_number(cls, value: object) -> object:
        """``version = 2`` (a TOML number, or ``--opt version=2``) is ``"2"``; 1.1 is ``"1.1"``."""
        if isinstance(value, int | float) and not isinstance(value, bool) and value in (2, 1.1):
            return "2" if value == 2 else "1.1"
        return value

    @field_validator("connect_to")
    @classmethod
    def _connect_to(cls, value: str | None) -> str | None:
        if value is not None:
            connect_target(value)
        return value

    @model_validator(mode="after")
    def _key_needs_cert(self, info: ValidationInfo) -> HttpOptions:
        if self.key_file and not self.cert_file and overrides_applied(info):
            raise ValueError("key_file needs cert_file")
        return self


class RequestParams(StrictModel):
    """Parameters of the ``request`` op (the keys of a ``[[group]]``)."""

    method: str = Field(default="GET", description="HTTP method")
    path: str | None = Field(
        default=None,
        description="path (and query) resolved against the target URL's path (RFC 3986);"
        " unset: the target URL's path as given",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="request headers")
    headers_file: str | None = Field(
        default=None,
        description="file of 'Name: value' lines, more request headers (read by each worker;"
        " never stored)",
    )
    body: str | None = Field(default=None, description="request body (UTF-8)")
    body_file: str | None = Field(default=None, description="file whose bytes are the body")
    expect_status: list[int] | None = Field(
        default=None, description="statuses that count as success (default: any 2xx)"
    )
    streams: int = Field(
        default=1,
        ge=1,
        le=MAX_STREAMS,
        description="HTTP/2: streams in flight on each connection (count is then connections;"
        " the server's SETTINGS_MAX_CONCURRENT_STREAMS bounds them)",
    )

    @field_validator("method")
    @classmethod
    def _upper(cls, value: str) -> str:
        check_request(value.upper(), "/", {})
        return value.upper()

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        check_request("GET", "/", value)
        return value

    @field_validator("expect_status")
    @classmethod
    def _statuses(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError("expected at least one status, or no expect_status for any 2xx")
            bad = [s for s in value if not 100 <= s <= 599]
            if bad:
                raise ValueError(f"expected HTTP statuses between 100 and 599, got {bad}")
        return value

    @field_validator("body_file")
    @classmethod
    def _file_exists(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not Path(value).is_file():
            raise ValueError(f"body_file {value!r} is not a readable file")
        try:
            with open(value, "rb") as file:
                size = os.fstat(file.fileno()).st_size
        except OSError as exc:
            raise ValueError(f"body_file {value!r} cannot be read: {exc.strerror}") from None
        if size > MAX_BODY_FILE:
            raise ValueError(f"body_file {value!r} is larger than {MAX_BODY_FILE >> 20} MiB")
        return value

    @field_validator("headers_file")
    @classmethod
    def _headers_readable(cls, value: str | None) -> str | None:
        if value is not None:
            check_request("GET", "/", read_headers(value))
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RequestParams:
        if self.body is not None and self.body_file is not None:
            raise ValueError("give body or body_file, not both")
        if self.path:
            check_relative_path(self.path)
        return self


def connection_share(
    params: Mapping[str, Any], options: Mapping[str, Any], target: str | None
) -> int:
    """The sessions that share a connection (``streams``), once the group's ``streams``, the
    ``version``, ``fallback``, ``keepalive`` and the target's scheme (``None``: the embedded
    target, whose scheme its ``[serve]`` options decide) fit together; ``ValueError``
    otherwise."""
    version = options.get("version", "1.1")
    if isinstance(version, int | float) and version in (2, 1.1):
        version = "2" if version == 2 else "1.1"
    streams = int(params.get("streams", 1))
    tls = None if target is None else target.lower().startswith("https:")
    if version == "1.1":
        if streams > 1:
            raise ValueError(
                f'streams = {streams} needs HTTP/2: set the option version = "2"'
                " (--http2, or --h2c for cleartext)"
            )
        if options.get("fallback"):
            raise ValueError('fallback is HTTP/2\'s: set the option version = "2" (--http2)')
        return 1
    if version == "h2c" and tls:
        raise ValueError(
            'version = "h2c" is HTTP/2 in cleartext: give an http:// target'
            ' (or version = "2" for HTTP/2 over TLS, --http2)'
        )
    if options.get("fallback") and tls is False:
        raise ValueError(
            "fallback to HTTP/1.1 is chosen by ALPN, over TLS only: give an https:// target"
        )
    for name in params.get("headers", {}):
        if str(name).lower() in FORBIDDEN:
            raise ValueError(
                f"header {name!r} is HTTP/1.1's, forbidden in HTTP/2 (RFC 9113 section 8.2.2)"
            )
    if not options.get("keepalive", True):
        raise ValueError(
            "keepalive = false (--disable-keepalive) is HTTP/1.1's; HTTP/2 keeps its connections"
        )
    return streams


MAX_HEADERS_FILE = 1024 * 1024
"""The largest ``headers_file`` read (bytes)."""
MAX_BODY_FILE = 64 * 1024 * 1024
"""The largest ``body_file`` (bytes): every worker holds it in memory."""


def read_headers(path: str) -> list[tuple[str, str]]:
    """The ``Name: value`` lines of a headers file (blank and ``#`` lines skipped).

    ``ValueError`` names the file and the line, never a value (it may be a secret).
    """
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_HEADERS_FILE + 1)
    except OSError as exc:
        raise ValueError(f"headers_file {path!r} cannot be read: {exc.strerror}") from None
    if len(data) > MAX_HEADERS_FILE:
        raise ValueError(f"headers_file {path!r} is larger than {MAX_HEADERS_FILE:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"headers_file {path!r} is not UTF-8 text") from None
    headers = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"headers_file {path!r} line {number}: expected 'Name: value'")
        headers.append((name.strip(), value.strip()))
    return headers
