"""wss:// against the embedded echo: verification on by default, insecure, mutual TLS."""

from __future__ import annotations

from pathlib import Path

import pytest

from protobench.protocols.base import CallbackSession
from protobench.protocols.websocket.plugin import WebSocketProtocol
from protobench.targets.ws import WsEchoTarget
from protobench.tlsutil import generate, split_url_files
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.echo import drive, open_session, serving

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
PLUGIN = WebSocketProtocol()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _echo_ok(url: str, **params: object) -> int:
    session = await open_session(PLUGIN, url, "echo", **params)
    assert isinstance(session, CallbackSession)
    outcome = await drive([session], 20)
    await session.close()
    assert outcome.errors == {}
    return outcome.ok


async def test_wss_with_the_announced_ca_verifies_and_echoes() -> None:
    async with serving(WsEchoTarget(), tls=True) as target:
        assert target.url.startswith("wss://127.0.0.1:")
        assert set(split_url_files(target.url)[1]) == {"ca_file"}
        assert await _echo_ok(target.url) == 20


async def test_a_wrong_ca_is_a_clear_connect_error(tmp_path: Path) -> None:
    other = generate(tmp_path, [])
    async with serving(WsEchoTarget(), tls=True) as target:
        with pytest.raises(OpError) as info:
            await open_session(PLUGIN, target.url, "echo", options={"ca_file": str(other.ca.cert)})
    assert info.value.error_class is ErrorClass.CONNECT
    assert "TLS certificate verification failed" in str(info.value)
    assert "certificate" in info.value.detail


async def test_without_a_ca_the_system_store_refuses_and_says_what_to_do() -> None:
    async with serving(WsEchoTarget(), tls=True) as target:
        bare = split_url_files(target.url)[0]
        with pytest.raises(OpError) as info:
            await open_session(PLUGIN, bare, "echo")
    assert info.value.error_class is ErrorClass.CONNECT
    assert "set ca_file, or insecure = true" in str(info.value)


async def test_insecure_skips_verification(tmp_path: Path) -> None:
    other = generate(tmp_path, [])
    async with serving(WsEchoTarget(), tls=True) as target:
        options = {"ca_file": str(other.ca.cert), "insecure": True}
        assert await _echo_ok(target.url, options=options) == 20


async def test_mutual_tls_needs_the_client_certificate() -> None:
    async with serving(WsEchoTarget(), tls=True, client_auth=True) as target:
        base, files = split_url_files(target.url)
        assert set(files) == {"ca_file", "cert_file", "key_file"}
        assert await _echo_ok(target.url) == 20
        with pytest.raises(OpError) as info:
            await open_session(PLUGIN, base, "echo", options={"ca_file": files["ca_file"]})
    assert info.value.error_class in (ErrorClass.CONNECT, ErrorClass.CLOSED)
