"""The MQTT plugin's options and operation parameters, and the target URL.

Targets are ``mqtt://host:port`` (default port 1883) or ``mqtts://host:port``
(TLS, default port 8883; ``tcp://``, ``ssl://`` and ``tls://`` are accepted
too). The ``tls`` option turns TLS on for an ``mqtt://`` URL; certificates are
verified against the system store or ``ca_file`` unless ``insecure`` is set.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BeforeValidator, Field, field_validator

from protobench.protocols.base import StrictModel
from protobench.protocols.mqtt.client import MAX_PACKET_SIZE
from protobench.protocols.mqtt.codec import MAX_PACKET, V5, V311
from protobench.protocols.mqtt.payload import HEADER_SIZE
from protobench.protocols.sourceaddr import SourceAddresses
from protobench.tlsutil import client_context
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.fields import Duration, Size

MAX_PAYLOAD = 256 * 1024 * 1024 - 1024

_VERSIONS = {"3.1.1": "3.1.1", "311": "3.1.1", "4": "3.1.1", "5": "5", "5.0": "5", "v5": "5"}


def _version(value: object) -> object:
    text = str(value).strip().lower()
    return _VERSIONS.get(text, value)


Version = Annotated[Literal["3.1.1", "5"], BeforeValidator(_version)]
QoS = Literal[0, 1, 2]


class MqttOptions(StrictModel):
    """Protocol-wide options (the profile's ``[options]``)."""

    version: Version = "3.1.1"
    username: str | None = None
    password: str | None = Field(default=None, description="secret: never stored nor printed")
    client_id_prefix: str = Field(
        default="pb",
        description="client ids are PREFIX + group + x + index ([0-9a-zA-Z] by default)",
    )
    keepalive: Duration = Field(default=60.0, description="seconds; 0 turns keepalive off")
    clean_session: bool = True
    session_expiry: Duration = Field(
        default=0.0, description="MQTT 5 session expiry interval (with clean_session = false)"
    )
    tls: bool = False
    ca_file: str | None = None
    insecure: bool = False
    source_addresses: SourceAddresses = Field(
        default=None,
        description="addresses to connect from: a count N (127.0.0.1..N) or a list; unset: "
        "automatic (a new loopback address every 20,000 sessions to a loopback broker)",
    )
    max_packet_size: Size = Field(
        default=MAX_PACKET_SIZE,
        ge=2,
        le=MAX_PACKET,
        description="the largest packet accepted from the broker (sent in an MQTT 5 CONNECT;"
        " a larger one is a protocol error that closes the connection)",
    )

    @field_validator("keepalive")
    @classmethod
    def _keepalive_range(cls, value: float) -> float:
        if not 0 <= value <= 65535:
            raise ValueError("expected a keepalive between 0 and 65535 seconds")
        return value

    @property
    def protocol_level(self) -> int:
        return V5 if self.version == "5" else V311


class PublishParams(StrictModel):
    """``publish``: one PUBLISH per exchange; latency to PUBACK (QoS 1) / PUBCOMP (QoS 2).

    With QoS 0 the exchange completes when the message is queued on the
    connection (written to the socket in the same event-loop turn): it measures
    no network or broker time; the subscribers' latency is the end-to-end one.
    ``inflight`` sessions of the group share one connection, each with one
    message in flight: it is the connection's in-flight window for QoS 1/2.
    """

    topic: str = "protobench/{client}"
    qos: QoS = 0
    size: int = Field(default=256, ge=HEADER_SIZE, le=MAX_PAYLOAD)
    sizes: dict[int, float] | None = Field(
        default=None, description="weighted size mix, e.g. {64 = 70, 1024 = 30}; overrides size"
    )
    retain: bool = False
    inflight: int = Field(default=1, ge=1, le=65535)

    @field_validator("sizes")
    @classmethod
    def _sizes_valid(cls, value: dict[int, float] | None) -> dict[int, float] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("expected at least one size")
        for size, weight in value.items():
            if not HEADER_SIZE <= size <= MAX_PAYLOAD:
                raise ValueError(f"payload size {size} outside {HEADER_SIZE}..{MAX_PAYLOAD}")
            if weight <= 0:
                raise ValueError(f"weight of size {size} must be > 0")
        return value

    @field_validator("topic")
    @classmethod
    def _topic_valid(cls, value: str) -> str:
        if not value or "+" in value or "#" in value:
            raise ValueError("expected a topic name without wildcards")
        try:
            value.format(client=0, seq=0)
        except (KeyError, IndexError, ValueError):
            raise ValueError("the topic may only use the fields {client} and {seq}") from None
        return value


class SubscribeParams(StrictModel):
    """``subscribe``: receive messages on ``topics`` (filters, wildcards, ``$share/...``)."""

    topics: list[str] = Field(default_factory=lambda: ["protobench/#"], min_length=1)
    qos: QoS = 0

    @field_validator("topics")
    @classmethod
    def _filters_valid(cls, value: list[str]) -> list[str]:
        for topic in value:
            if not topic:
                raise ValueError("expected non-empty topic filters")
        return value


class ConnectParams(StrictModel):
    """``connect``: one exchange is TCP connect + CONNECT + CONNACK (timed), then DISCONNECT."""


class IdleParams(StrictModel):
    """``idle``: hold a connection open with keepalive pings; records no latency."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect: host, port, the TLS context (or None), the URL's credentials."""

    host: str
    port: int
    ssl_context: ssl.SSLContext | None
    username: str | None = None
    password: str | None = None


@cache
def endpoint(target: str, options: MqttOptions) -> Endpoint:
    """Parse the target URL once per process; raise ``OpError(connect)`` if unusable."""
    parts = urlsplit(target if "://" in target else f"mqtt://{target}")
    scheme = parts.scheme.lower()
    if scheme not in ("mqtt", "tcp", "mqtts", "ssl", "tls"):
        raise OpError(
            ErrorClass.CONNECT, f"unsupported target scheme {scheme!r} (use mqtt:// or mqtts://)"
        )
    tls = options.tls or scheme in ("mqtts", "ssl", "tls")
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError as exc:
        raise OpError(ErrorClass.CONNECT, f"bad target port: {exc}") from None
    host = parts.hostname or "127.0.0.1"
    context = None
    if tls:
        try:
            context = client_context(ca_file=options.ca_file, insecure=options.insecure)
        except OSError as exc:
            raise OpError(ErrorClass.CONNECT, f"TLS: cannot load ca_file: {exc}") from None
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return Endpoint(host, port, context, username, password)
