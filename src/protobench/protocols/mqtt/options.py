"""The MQTT plugin's options and operation parameters, and the target URL.

Targets are ``mqtt://host:port`` (default port 1883) or ``mqtts://host:port``
(TLS, default port 8883; ``tcp://``, ``ssl://`` and ``tls://`` are accepted
too), or MQTT over WebSocket: ``ws://host:port/path`` and ``wss://...`` (TLS;
the path defaults to ``/mqtt``, the ports to 80 and 443). The ``tls`` option
turns TLS on for an ``mqtt://`` URL; certificates are verified against the
system store or ``ca_file`` unless ``insecure`` is set; ``cert_file`` and
``key_file`` present a client certificate (mutual TLS) on ``mqtts://`` and
``wss://``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from protobench.protocols.base import StrictModel, overrides_applied
from protobench.protocols.mqtt.client import MAX_PACKET_SIZE
from protobench.protocols.mqtt.codec import MAX_PACKET, V5, V311
from protobench.protocols.mqtt.payload import HEADER_SIZE
from protobench.protocols.sourceaddr import SourceAddresses
from protobench.protocols.websocket.options import WebSocketOptions
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


def check_topic_name(value: str, seq: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is a topic name template: no wildcards, only the
    fields ``{client}`` (and ``{seq}`` where ``seq``)."""
    if not value or "+" in value or "#" in value:
        raise ValueError("expected a topic name without wildcards")
    fields = "{client} and {seq}" if seq else "{client}"
    try:
        value.format(client=0, **({"seq": 0} if seq else {}))
    except (KeyError, IndexError, ValueError):
        raise ValueError(f"the topic may only use the fields {fields}") from None


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
    cert_file: str | None = Field(
        default=None, description="client certificate (PEM) for mutual TLS, with key_file"
    )
    key_file: str | None = Field(default=None, description="the client certificate's key (PEM)")
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
    will_topic: str | None = Field(
        default=None,
        description="the will of every session's connection ({client} = session index): the "
        "broker publishes it when the connection ends without DISCONNECT",
    )
    will_payload: str | None = Field(
        default=None, description="the will's payload (UTF-8); unset: a stamp subscribers count"
    )
    will_qos: QoS = 0
    will_retain: bool = False
    will_delay: Duration = Field(
        default=0.0, description="MQTT 5 will delay interval: the broker waits this long"
    )
    will_expiry: Duration | None = Field(
        default=None, description="MQTT 5 message expiry interval of the will"
    )
    will_content_type: str | None = Field(default=None, description="MQTT 5 will content type")
    will_user_properties: dict[str, str] = Field(
        default_factory=dict, description="MQTT 5 user properties of the will"
    )

    @field_validator("keepalive")
    @classmethod
    def _keepalive_range(cls, value: float) -> float:
        if not 0 <= value <= 65535:
            raise ValueError("expected a keepalive between 0 and 65535 seconds")
        return value

    @field_validator("will_topic")
    @classmethod
    def _will_topic_valid(cls, value: str | None) -> str | None:
        if value is not None:
            check_topic_name(value)
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> MqttOptions:
        if not overrides_applied(info):
            return self
        if self.key_file and not self.cert_file:
            raise ValueError("key_file needs cert_file")
        v5_only = {
            "will_delay": bool(self.will_delay),
            "will_expiry": self.will_expiry is not None,
            "will_content_type": self.will_content_type is not None,
            "will_user_properties": bool(self.will_user_properties),
        }
        used = [name for name, given in v5_only.items() if given]
        if used and self.version != "5":
            raise ValueError(f'{", ".join(used)}: MQTT 5 will properties need version = "5"')
        will_set = self.will_payload is not None or self.will_qos or self.will_retain
        if (used or will_set) and self.will_topic is None:
            raise ValueError("a will needs will_topic")
        return self

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
    user_properties: dict[str, str] = Field(
        default_factory=dict, description="MQTT 5 user properties of every PUBLISH"
    )
    message_expiry: Duration | None = Field(
        default=None, description="MQTT 5 message expiry interval of every PUBLISH"
    )
    content_type: str | None = Field(default=None, description="MQTT 5 content type")
    topic_alias: bool = Field(
        default=False,
        description="MQTT 5: send each topic once, then its alias (as many as the broker's "
        "Topic Alias Maximum allows; the topics beyond it go by name)",
    )

    @property
    def v5_properties(self) -> list[str]:
        """The MQTT 5 features these params use (they need ``version = "5"``)."""
        used = {
            "user_properties": bool(self.user_properties),
            "message_expiry": self.message_expiry is not None,
            "content_type": self.content_type is not None,
            "topic_alias": self.topic_alias,
        }
        return [name for name, given in used.items() if given]

    @field_validator("message_expiry")
    @classmethod
    def _expiry_range(cls, value: float | None) -> float | None:
        if value is not None and not 1 <= value <= 0xFFFFFFFF:
            raise ValueError("expected a message expiry between 1 s and 4294967295 s")
        return value

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
        check_topic_name(value, seq=True)
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


class DropParams(StrictModel):
    """``drop``: one exchange is TCP connect + CONNECT + CONNACK (timed), then the connection
    is dropped without DISCONNECT, so the broker publishes its will (``will_topic``)."""


class IdleParams(StrictModel):
    """``idle``: hold a connection open with keepalive pings; records no latency."""


WS_SCHEMES = ("ws", "wss")
SCHEMES = ("mqtt", "tcp", "mqtts", "ssl", "tls", *WS_SCHEMES)
WS_PATH = "/mqtt"
"""The path of a ``ws://`` URL without one (what most brokers serve MQTT on)."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect: host, port, the TLS context (or None), the URL's credentials,
    and for MQTT over WebSocket the URL and options of the WebSocket (else None)."""

    host: str
    port: int
    ssl_context: ssl.SSLContext | None
    username: str | None = None
    password: str | None = None
    websocket: tuple[str, WebSocketOptions] | None = None


_ENDPOINTS: dict[tuple[str, int], tuple[MqttOptions, Endpoint]] = {}


def endpoint(target: str, options: MqttOptions) -> Endpoint:
    """Parse the target URL once per process and options object; raise ``OpError(connect)``
    if unusable. (Keyed by the options' identity, kept alive here: options with lists and
    tables are not hashable.)"""
    key = (target, id(options))
    found = _ENDPOINTS.get(key)
    if found is None or found[0] is not options:
        found = _ENDPOINTS[key] = (options, _endpoint(target, options))
    return found[1]


def _endpoint(target: str, options: MqttOptions) -> Endpoint:
    parts = urlsplit(target if "://" in target else f"mqtt://{target}")
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise OpError(
            ErrorClass.CONNECT,
            f"unsupported target scheme {scheme!r} (use mqtt://, mqtts://, ws:// or wss://)",
        )
    tls = options.tls or scheme in ("mqtts", "ssl", "tls", "wss")
    try:
        port = parts.port or _default_port(scheme, tls)
    except ValueError as exc:
        raise OpError(ErrorClass.CONNECT, f"bad target port: {exc}") from None
    host = parts.hostname or "127.0.0.1"
    context = None
    if tls:
        try:
            context = client_context(
                ca_file=options.ca_file,
                cert_file=options.cert_file,
                key_file=options.key_file,
                insecure=options.insecure,
            )
        except (OSError, ssl.SSLError) as exc:
            files = ", ".join(
                f"{name} {value}"
                for name, value in (
                    ("ca_file", options.ca_file),
                    ("cert_file", options.cert_file),
                    ("key_file", options.key_file),
                )
                if value
            )
            raise OpError(ErrorClass.CONNECT, f"TLS: cannot load {files}: {exc}") from None
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    websocket = None
    if scheme in WS_SCHEMES:
        path = parts.path or WS_PATH
        url = f"{'wss' if tls else 'ws'}://{parts.hostname or '127.0.0.1'}:{port}{path}"
        if parts.query:
            url += f"?{parts.query}"
        websocket = (url, _websocket_options(options))
    return Endpoint(host, port, context, username, password, websocket)


def _default_port(scheme: str, tls: bool) -> int:
    if scheme in WS_SCHEMES:
        return 443 if tls else 80
    return 8883 if tls else 1883


def _websocket_options(options: MqttOptions) -> WebSocketOptions:
    """The WebSocket under MQTT: subprotocol ``mqtt``, the TLS files, the source addresses."""
    return WebSocketOptions(
        subprotocols=["mqtt"],
        insecure=options.insecure,
        ca_file=options.ca_file,
        cert_file=options.cert_file,
        key_file=options.key_file or options.cert_file,  # one PEM may hold both
        source_addresses=options.source_addresses,
        max_size=MAX_PAYLOAD + 1024,
    )
