"""A client certificate on ``mqtts://`` (mutual TLS): mosquitto with ``require_certificate
true`` and mochi-mqtt requiring one accept our certificate and refuse a connection without."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.mqtt.sessions import ConnectSession, PublishSession, SubscribeSession
from protobench.tlsutil import MockPki, generate
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.mochi import mochi
from tests.support.mqtt import PLUGIN, context, mosquitto, publish_n, wait_for_count

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


@contextmanager
def tls_broker(name: str, directory: Path, pki: MockPki) -> Iterator[str]:
    """The ``mqtts://`` URL of a broker requiring a client certificate of ``pki``'s CA."""
    server = pki.leaves["server"]
    if name == "mosquitto":
        with mosquitto(directory, tls=(server.cert, server.key), client_ca=pki.ca.cert) as broker:
            yield broker.url
    else:
        with mochi(directory, pki) as other:
            yield other.url("tls")


@pytest.mark.parametrize("name", ["mosquitto", "mochi"])
async def test_a_client_certificate_is_presented_and_required(tmp_path: Path, name: str) -> None:
    pki = generate(tmp_path / "pki", ["server", "client"])
    client = pki.leaves["client"]
    ca = {"ca_file": str(pki.ca.cert)}
    mutual = {**ca, "cert_file": str(client.cert), "key_file": str(client.key)}
    with tls_broker(name, tmp_path, pki) as url:
        assert url.startswith("mqtts://")
        sub = cast(
            SubscribeSession,
            await PLUGIN.open_session(context(url, "subscribe", topics=["tl/#"], options=mutual)),
        )
        recorder = OpRecorder("sub")
        task = asyncio.create_task(sub.run(recorder))
        pub = cast(
            PublishSession,
            await PLUGIN.open_session(context(url, "publish", topic="tl/x", options=mutual)),
        )
        assert (await publish_n(pub, 100))[0] == []
        assert await wait_for_count(recorder, "received", 100) == 100
        await pub.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await sub.close()
        with pytest.raises(OpError) as refused:
            await ConnectSession(context(url, "connect", options=ca)).call()
    assert (recorder.counters["received"], recorder.counters["expected"]) == (100, 100)
    # the broker ends the handshake (TLS alert) or the connection: never a CONNACK
    assert refused.value.error_class in (ErrorClass.CONNECT, ErrorClass.CLOSED)


def test_key_file_needs_cert_file_and_unreadable_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="key_file needs cert_file"):
        context("mqtts://127.0.0.1:1", "connect", options={"key_file": "k.pem"})
    missing = str(tmp_path / "nope.pem")
    session = ConnectSession(
        context("mqtts://127.0.0.1:1", "connect", options={"cert_file": missing})
    )
    with pytest.raises(OpError) as caught:
        asyncio.run(session.call())
    assert caught.value.error_class is ErrorClass.CONNECT
    assert f"cert_file {missing}" in str(caught.value)
