"""Helpers of the HTTP tests: the embedded target in-process, raw servers, TLS certs, a driver."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from protobench.protocols.base import CallbackSession, SessionContext
from protobench.protocols.http.options import HttpOptions, RequestParams
from protobench.protocols.http.plugin import HttpProtocol
from protobench.protocols.timestamps.reactor import Reactor
from protobench.targets.http import HttpServer, HttpTargetOptions, start_server
from protobench.vocab.errors import OpError
from tests.support.timing import S

UVLOOP_BACKEND = ("asyncio", {"use_uvloop": True})


@asynccontextmanager
async def http_target(ssl: Any = None, **options: Any) -> AsyncIterator[HttpServer]:
    """The embedded HTTP target on 127.0.0.1, any free port, in this event loop."""
    server = await start_server("127.0.0.1", 0, HttpTargetOptions(**options), ssl=ssl)
    try:
        yield server
    finally:
        server.close()


class _RawProtocol(asyncio.Protocol):
    def __init__(
        self, on_data: Callable[[asyncio.Transport, bytes], None], opened: list[asyncio.Transport]
    ) -> None:
        self.on_data = on_data
        self.opened = opened
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.opened.append(self.transport)  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.on_data(self.transport, data)


@asynccontextmanager
async def raw_server(
    on_data: Callable[[asyncio.Transport, bytes], None],
) -> AsyncIterator[str]:
    """A loopback TCP server calling ``on_data(transport, data)``; yields its URL."""
    loop = asyncio.get_running_loop()
    opened: list[asyncio.Transport] = []
    server = await loop.create_server(lambda: _RawProtocol(on_data, opened), "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()
        for transport in opened:
            transport.abort()


def closed_port() -> int:
    """A loopback port where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1/localhost and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "protobench test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def context(
    target: str,
    timeout: float = 5.0,
    options: Any = None,
    counters: Counter[str] | None = None,
    reactor: Reactor | None = None,
    **params: Any,
) -> SessionContext:
    """A session context for the ``request`` op, validated like a profile's keys.

    ``counters`` receives what the session counts (``connects``...); with a ``reactor``
    the session reads the kernel's clock.
    """
    sink = counters if counters is not None else Counter[str]()
    return SessionContext(
        target=target,
        group="get",
        op="request",
        index=0,
        worker=0,
        params=RequestParams(**params),
        options=HttpOptions(**(options or {})),
        timeout=timeout,
        count=lambda name, n: sink.update({name: n}),
        reactor=reactor,
    )


async def open_session(target: str, **kwargs: Any) -> CallbackSession:
    session = await HttpProtocol().open_session(context(target, **kwargs))
    assert isinstance(session, CallbackSession)
    return session


async def exchange(session: CallbackSession) -> tuple[OpError | None, int]:
    """One exchange on a callback session, awaited."""
    future: asyncio.Future[tuple[OpError | None, int]] = asyncio.get_running_loop().create_future()
    session.submit(lambda error, nbytes: future.set_result((error, nbytes)))
    return await asyncio.wait_for(future, 30 * S)


async def back_to_back(session: CallbackSession, count: int) -> list[tuple[OpError | None, int]]:
    """``count`` exchanges chained from the completion callback, as the engine runs them."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    results: list[tuple[OpError | None, int]] = []

    def done(error: OpError | None, nbytes: int) -> None:
        results.append((error, nbytes))
        if len(results) < count:
            session.submit(done)
        else:
            finished.set_result(None)

    session.submit(done)
    await asyncio.wait_for(finished, 60 * S)
    return results
