"""Options of the ``http`` protocol and the parameters of its one op, ``request``.

Options: ``insecure`` (skip TLS verification), ``ca_file``, ``cert_file`` and
``key_file`` (mutual TLS), ``secret_headers`` (header names whose values are
never stored or printed, in addition to names that look like credentials),
``max_header_size`` (the longest response head, 64 KiB by default; a longer one
is a ``protocol`` error and the connection is closed).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator, model_validator

from protobench.protocols.base import StrictModel
from protobench.protocols.http.client import MAX_HEAD, check_relative_path, check_request
from protobench.vocab.fields import Size


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
    max_header_size: Size = Field(
        default=MAX_HEAD,
        ge=1,
        description="the longest response head (a longer one is a protocol error)",
    )

    @model_validator(mode="after")
    def _key_needs_cert(self) -> HttpOptions:
        if self.key_file and not self.cert_file:
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
    body: str | None = Field(default=None, description="request body (UTF-8)")
    body_file: str | None = Field(default=None, description="file whose bytes are the body")
    expect_status: list[int] | None = Field(
        default=None, description="statuses that count as success (default: any 2xx)"
    )

    @field_validator("method")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

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
        if value is not None and not Path(value).is_file():
            raise ValueError(f"body_file {value!r} is not a readable file")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RequestParams:
        if self.body is not None and self.body_file is not None:
            raise ValueError("give body or body_file, not both")
        if self.path:
            check_relative_path(self.path)
        check_request(self.method, "/", self.headers)
        return self
