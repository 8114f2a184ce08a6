"""Options of the ``websocket`` protocol and parameters of its operations.

Secrets: ``key_password`` is secret, and so is the value of every secret header
(:func:`protobench.protocols.base.is_secret_header`, or listed in the
``secret_headers`` option); the base ``ProtocolPlugin.redact`` hides them.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from protobench.protocols.base import StrictModel
from protobench.protocols.payloads import Mode, PayloadSize, check_mix, parse_mix
from protobench.protocols.sourceaddr import SourceAddresses
from protobench.vocab.fields import Rate, Size


class WebSocketOptions(StrictModel):
    """Connection options shared by every group of a run."""

    compression: bool = False
    """Offer permessage-deflate (frames then go through websockets' own codec)."""
    subprotocols: list[str] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)
    secret_headers: list[str] = Field(default_factory=list)
    """More header names whose values are secrets (beside Authorization, Cookie...)."""
    origin: str | None = None
    insecure: bool = False
    """wss:// without certificate verification (verification is on by default)."""
    ca_file: str | None = None
    cert_file: str | None = None
    """Client certificate (PEM) for mutual TLS, with ``key_file``."""
    key_file: str | None = None
    key_password: str | None = None
    max_size: Size = Field(default=16 * 1024 * 1024, ge=1, le=1024 * 1024 * 1024)
    """The longest frame or message accepted (``"16MiB"``); a longer one (or one that
    inflates past it) is ``protocol: frame length over max_size`` and ends the connection."""
    source_addresses: SourceAddresses = None
    """Addresses to connect from: a count N (127.0.0.1..N) or a list; unset: automatic
    (a new loopback address every 20,000 sessions to a loopback server)."""

    @model_validator(mode="after")
    def _client_pair(self) -> WebSocketOptions:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self


class EchoParams(StrictModel):
    """``echo``: send one tagged message, await the same bytes back."""

    payload: PayloadSize = Field(default_factory=lambda: parse_mix(200))
    mode: Mode = "binary"

    @model_validator(mode="after")
    def _fits_tag(self) -> EchoParams:
        check_mix(self.payload, self.mode)
        return self


class SendParams(EchoParams):
    """``send``: fire-and-forget messages at ``rate`` per session (unlimited if unset)."""

    rate: Rate | None = None


class SubscribeParams(StrictModel):
    """``subscribe``: receive what the server pushes.

    ``path`` replaces the target URL's path (the embedded target pushes on
    ``/push``); ``message`` is sent once after connecting (a subscription
    request); ``stamped`` messages start with the embedded target's push header
    (sequence, send time) so losses and the one-way delay can be measured.
    """

    path: str | None = None
    message: str | None = None
    stamped: bool = True
