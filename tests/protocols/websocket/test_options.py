"""websocket plugin declarations: options, params, secrets, the built-in profile."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from protobench.profiles import loader
from protobench.protocols import registry
from protobench.protocols.websocket.client import endpoint
from protobench.protocols.websocket.options import (
    EchoParams,
    SendParams,
    SubscribeParams,
    WebSocketOptions,
)
from protobench.protocols.websocket.plugin import WebSocketProtocol
from protobench.vocab.errors import OpError


def test_registered_under_its_entry_point() -> None:
    plugin = registry.load("websocket")
    assert isinstance(plugin, WebSocketProtocol)
    assert set(plugin.operations) == {"echo", "send", "subscribe"}
    assert plugin.embedded_target == "ws"


def test_params_defaults_and_checks() -> None:
    echo = EchoParams()
    assert (echo.payload.max_size, echo.mode) == (200, "binary")
    assert SendParams.model_validate({"rate": "500/s"}).rate == 500.0
    assert SubscribeParams.model_validate({"path": "/push", "stamped": True}).path == "/push"
    with pytest.raises(ValidationError, match="smaller than the text tag"):
        EchoParams.model_validate({"payload": 16, "mode": "text"})
    with pytest.raises(ValidationError, match="Extra inputs"):
        EchoParams.model_validate({"size": 16})


def test_client_certificate_needs_its_key() -> None:
    with pytest.raises(ValidationError, match="cert_file and key_file go together"):
        WebSocketOptions(cert_file="client.pem")


def test_redact_hides_secret_headers_and_key_password() -> None:
    plugin = WebSocketProtocol()
    options = {
        "headers": {"Authorization": "Bearer abc", "X-Trace": "1", "X-Session": "s3cret"},
        "secret_headers": ["x-session"],
        "key_password": "pw",
    }
    redacted = plugin.redact(options)
    assert redacted["headers"] == {
        "Authorization": "<secret>",
        "X-Trace": "1",
        "X-Session": "<secret>",
    }
    assert redacted["key_password"] == "<secret>"
    assert options["headers"]["Authorization"] == "Bearer abc"


def test_endpoint_reads_tls_files_from_the_fragment() -> None:
    plain = endpoint("ws://127.0.0.1:9/x?y=1", WebSocketOptions())
    assert (plain.host, plain.port, plain.ssl, plain.url) == (
        "127.0.0.1",
        9,
        None,
        "ws://127.0.0.1:9/x?y=1",
    )
    assert (
        endpoint("ws://127.0.0.1:9/x?y=1", WebSocketOptions(), "/push").url
        == "ws://127.0.0.1:9/push"
    )
    with pytest.raises(OpError, match="cannot load the TLS files"):
        endpoint("wss://127.0.0.1:9/#ca_file=/nonexistent/ca.pem", WebSocketOptions())
    with pytest.raises(OpError, match="expected a ws:// or wss:// URL"):
        endpoint("http://127.0.0.1:9/", WebSocketOptions())


def test_builtin_profile_ws_echo() -> None:
    profile = loader.load("ws-echo").profile
    assert profile.protocol == "websocket"
    assert profile.target == "embedded"
    (group,) = profile.group
    assert (group.op, group.count, group.every) == ("echo", 20, None)
    assert EchoParams.model_validate(group.params).payload.max_size == 200
