"""bacnet-sc ``inflight`` (sessions sharing one SC connection) and a rejected client
certificate, against the embedded hub and against a hub built here from bac-py's own
classes (``SCHubFunction`` and ``SCTransport`` echo nodes, as bac-py's SC benchmark does)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from bac_py.transport.sc import SCTransport, SCTransportConfig
from bac_py.transport.sc.hub_function import SCHubConfig, SCHubFunction
from bac_py.transport.sc.tls import SCTLSConfig, build_client_ssl_context
from bac_py.transport.sc.vmac import SCVMAC, DeviceUUID

from protobench.hostutil import free_port
from protobench.protocols.bacnet_sc.client import _probe
from protobench.protocols.bacnet_sc.plugin import BacnetScProtocol
from protobench.protocols.base import CallbackSession
from protobench.targets.bacnet_sc import BacnetScTarget
from protobench.tlsutil import CertPair, MockPki, generate, split_url_files, url_with_files
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.echo import drive, open_session, serving

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
PLUGIN = BacnetScProtocol()
NODES = (b"\x02\xbb\x00\x00\x00\x01", b"\x02\xbb\x00\x00\x00\x02")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _echo(node: SCTransport) -> Callable[[bytes, bytes], None]:
    return lambda npdu, source: node.send_unicast(b"ECHO:" + npdu, source)


def _tls(pki: MockPki, pair: CertPair) -> SCTLSConfig:
    return SCTLSConfig(
        private_key_path=str(pair.key),
        certificate_path=str(pair.cert),
        ca_certificates_path=str(pki.ca.cert),
    )


@asynccontextmanager
async def bacpy_hub(workdir: Path) -> AsyncIterator[tuple[str, SCHubFunction]]:
    """bac-py's hub on loopback with two echo nodes (``b"ECHO:" + npdu`` to the sender)."""
    pki = generate(workdir, ["hub", "node1", "node2", "client"])
    port = free_port()
    hub = SCHubFunction(
        SCVMAC.random(),
        DeviceUUID.generate(),
        config=SCHubConfig(
            bind_address="127.0.0.1", bind_port=port, tls_config=_tls(pki, pki.leaves["hub"])
        ),
    )
    await hub.start()
    nodes = []
    try:
        for number, vmac in enumerate(NODES, 1):
            node = SCTransport(
                SCTransportConfig(
                    primary_hub_uri=f"wss://127.0.0.1:{port}",
                    tls_config=_tls(pki, pki.leaves[f"node{number}"]),
                    vmac=SCVMAC(vmac),
                )
            )
            node.on_receive(_echo(node))
            nodes.append(node)
            await node.start()
            assert await node.hub_connector.wait_connected(10)
        client = pki.leaves["client"]
        files = {"ca_file": str(pki.ca.cert), "cert_file": str(client.cert)}
        yield url_with_files(f"wss://127.0.0.1:{port}", {**files, "key_file": str(client.key)}), hub
    finally:
        for node in nodes:
            await node.stop()
        await hub.stop()


@asynccontextmanager
async def _hub_url(kind: str, workdir: Path) -> AsyncIterator[str]:
    if kind == "embedded":
        async with serving(BacnetScTarget()) as target:
            yield target.url
    else:
        async with bacpy_hub(workdir) as (url, _):
            yield url


async def _inflight_sessions(url: str, count: int, inflight: int) -> list[CallbackSession]:
    sessions = []
    for index in range(count):
        session = await open_session(PLUGIN, url, "unicast", index, inflight=inflight)
        assert isinstance(session, CallbackSession)
        sessions.append(session)
    return sessions


async def test_eight_sessions_in_flight_share_one_connection_to_a_bac_py_hub(
    tmp_path: Path,
) -> None:
    async with bacpy_hub(tmp_path) as (url, hub):
        sessions = await _inflight_sessions(url, 8, inflight=8)
        assert hub.connection_count == len(NODES) + 1
        sessions += await _inflight_sessions(url, 1, inflight=8)  # a ninth: a second node
        assert hub.connection_count == len(NODES) + 2
        outcome = await drive(sessions, 200)
        for session in sessions[:4]:
            await session.close()
        assert hub.connection_count == len(NODES) + 2, "the rest still use the shared one"
        for session in sessions[4:]:
            await session.close()
            await session.close()
        for _ in range(100):
            if hub.connection_count == len(NODES):
                break
            await asyncio.sleep(0.02)
        assert hub.connection_count == len(NODES)
    assert outcome.errors == {}
    assert outcome.ok == 9 * 200


async def test_sessions_in_flight_on_the_embedded_hub_each_get_their_own_echoes() -> None:
    async with serving(BacnetScTarget()) as target:
        sessions = await _inflight_sessions(target.url, 8, inflight=8)
        outcome = await drive(sessions, 200)
        for session in sessions:
            await session.close()
    assert outcome.errors == {}
    assert outcome.ok == 8 * 200


async def test_a_lost_hub_fails_every_session_of_the_shared_connection(tmp_path: Path) -> None:
    async with bacpy_hub(tmp_path) as (url, _):
        sessions = await _inflight_sessions(url, 4, inflight=4)
        assert (await drive(sessions, 10)).ok == 40
    for _ in range(100):
        outcome = await drive(sessions, 1)
        if outcome.errors:
            break
        await asyncio.sleep(0.05)
    assert outcome.errors == {"closed": 4}
    for session in sessions:
        await session.close()


async def _rejected_within(url: str, open_timeout: float) -> tuple[OpError, float]:
    started = time.perf_counter()
    with pytest.raises(OpError) as info:
        await open_session(PLUGIN, url, "unicast", inflight=2, timeout=open_timeout)
    return info.value, time.perf_counter() - started


@pytest.mark.parametrize("hub", ["embedded", "bac-py"])
async def test_a_client_certificate_of_another_ca_is_named_before_the_open_timeout(
    tmp_path: Path, hub: str
) -> None:
    """The hub drops us after our side of the TLS 1.3 handshake ended: said at once, not
    ``no connection within 3s`` after the whole open timeout."""
    stranger = generate(tmp_path / "other", ["client"]).leaves["client"]
    theirs = {"cert_file": str(stranger.cert), "key_file": str(stranger.key)}
    async with _hub_url(hub, tmp_path / "hub") as url:
        base, files = split_url_files(url)
        error, elapsed = await _rejected_within(url_with_files(base, {**files, **theirs}), 3.0)
    assert error.error_class is ErrorClass.CONNECT
    assert "rejected our client certificate" in str(error), error
    assert elapsed < 3.0


async def test_no_client_certificate_is_named_by_the_probe(tmp_path: Path) -> None:
    async with bacpy_hub(tmp_path) as (url, _):
        base, files = split_url_files(url)
        context = build_client_ssl_context(SCTLSConfig(ca_certificates_path=files["ca_file"]))
        with pytest.raises(OpError) as info:
            await _probe(base, context, 3.0)
        await _probe(base, build_client_ssl_context(_tls_of(files)), 3.0)  # accepted: no error
    assert info.value.error_class is ErrorClass.CONNECT
    assert "rejected our client certificate" in str(info.value)


def _tls_of(files: dict[str, str]) -> SCTLSConfig:
    return SCTLSConfig(
        private_key_path=files["key_file"],
        certificate_path=files["cert_file"],
        ca_certificates_path=files["ca_file"],
    )
