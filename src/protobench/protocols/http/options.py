"""Options of the ``http`` protocol and the parameters of its one op, ``request``.

Options: ``insecure`` (skip TLS verification), ``ca_file``, ``cert_file`` and
``key_file`` (mutual TLS), ``secret_headers`` (header names whose values are
never stored or printed, in addition to names that look like credentials),
``connect_to`` (connect to another address than the URL's; ``Host`` and the TLS
name stay the URL's) and ``keepalive`` (false: every request on a new
connection, with ``Connection: close``). The parameters' ``headers_file`` is
read by :func:`read_headers`. The one-line runs' flags (``protobench run URL
-H ...``) that set these keys are :mod:`.flags`.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator, model_validator

from protobench.protocols.base import StrictModel, overrides_applied
from protobench.protocols.http.client import check_relative_path, check_request
from protobench.protocols.http.flags import CONNECT_TO, connect_target


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
