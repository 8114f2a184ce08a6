"""The mock PKI: strict-X.509 valid certificates for loopback, and URL fragments."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from protobench.tlsutil import client_context, generate, split_url_files, url_with_files


def test_generated_files(tmp_path: Path) -> None:
    pki = generate(tmp_path / "pki", ["server", "client"])
    assert set(pki.leaves) == {"server", "client"}
    for pair in [pki.ca, *pki.leaves.values()]:
        assert pair.cert.exists()
        assert pair.key.stat().st_mode & 0o077 == 0
    cert = x509.load_pem_x509_certificate(pki.leaves["server"].cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert cert.public_key().curve.name == "secp256r1"  # type: ignore[union-attr]


def _server_context(pki_dir: Path, mutual: bool) -> ssl.SSLContext:
    pki = generate(pki_dir, ["server", "client"])
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.leaves["server"].cert, pki.leaves["server"].key)
    if mutual:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki.ca.cert)
    return ctx


async def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str) -> bytes:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server)
    port = listener.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client, server_hostname=host
        )
        data = await reader.read()
        writer.close()
        return data
    finally:
        listener.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_mutual_tls_with_strict_verification(tmp_path: Path, host: str) -> None:
    server = _server_context(tmp_path, mutual=True)
    client = client_context(
        ca_file=str(tmp_path / "ca.pem"),
        cert_file=str(tmp_path / "client.pem"),
        key_file=str(tmp_path / "client.key"),
    )
    assert client.verify_flags & ssl.VERIFY_X509_STRICT
    assert asyncio.run(_handshake(server, client, host)) == b"ok"


def test_another_ca_is_refused_unless_insecure(tmp_path: Path) -> None:
    server = _server_context(tmp_path / "a", mutual=False)
    other = generate(tmp_path / "b", [])
    with pytest.raises(ssl.SSLCertVerificationError):
        asyncio.run(_handshake(server, client_context(ca_file=str(other.ca.cert)), "127.0.0.1"))
    insecure = client_context(ca_file=str(other.ca.cert), insecure=True)
    assert asyncio.run(_handshake(server, insecure, "127.0.0.1")) == b"ok"


def test_url_fragment_round_trip() -> None:
    files = {"ca_file": "/tmp/a b/ca.pem", "cert_file": "/c.pem", "key_file": "/k.key"}
    url = url_with_files("wss://127.0.0.1:4443", files)
    assert url.startswith("wss://127.0.0.1:4443#ca_file=/tmp/a%20b/ca.pem&")
    assert split_url_files(url) == ("wss://127.0.0.1:4443", files)
    assert split_url_files("ws://127.0.0.1:1/#other=x") == ("ws://127.0.0.1:1/", {})
    assert url_with_files("ws://h:1/", {}) == "ws://h:1/"
