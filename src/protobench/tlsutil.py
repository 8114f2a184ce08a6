"""A throwaway certificate authority for loopback TLS: embedded targets and tests.

:func:`generate` writes into a directory a mock CA (``ca.pem``, ``ca.key``) and,
for every name asked, an EC P-256 leaf certificate signed by it
(``NAME.pem``, ``NAME.key``) with SAN ``localhost`` and ``127.0.0.1``, usable as
a server and as a client certificate (mutual TLS). Keys are unencrypted PEM
files readable by the owner only. Certificates are valid from one hour ago for
``days`` days and pass OpenSSL's strict X.509 checks (Python's default).

:func:`client_context` builds the client side: verification on unless
``insecure``, an optional CA file (else the system store) and an optional
client certificate.

A target that generated files tells its clients where they are in the
fragment of the URL it announces (a fragment never leaves the client):
``wss://127.0.0.1:4443/#ca_file=/tmp/x/ca.pem&cert_file=...&key_file=...``;
:func:`url_with_files` writes it and :func:`split_url_files` reads it back.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

URL_FILE_KEYS = ("ca_file", "cert_file", "key_file")


@dataclass(frozen=True)
class CertPair:
    """Paths of one certificate and its private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class MockPki:
    """What :func:`generate` wrote: the CA and one pair per name."""

    directory: Path
    ca: CertPair
    leaves: dict[str, CertPair]


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "protobench mock PKI"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def generate(directory: str | Path, names: list[str], days: int = 1) -> MockPki:
    """Create a CA and one leaf certificate per name in ``directory`` (created if needed)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    not_before = now - datetime.timedelta(hours=1)
    not_after = now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("protobench mock CA")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca = CertPair(root / "ca.pem", root / "ca.key")
    _write_cert(ca.cert, ca_cert)
    _write_key(ca.key, ca_key)

    leaves: dict[str, CertPair] = {}
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=True,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        pair = CertPair(root / f"{name}.pem", root / f"{name}.key")
        _write_cert(pair.cert, cert)
        _write_key(pair.key, key)
        leaves[name] = pair
    return MockPki(root, ca, leaves)


def url_with_files(url: str, files: dict[str, str]) -> str:
    """``url`` with ``files`` (``ca_file``, ``cert_file``, ``key_file``) in its fragment."""
    if not files:
        return url
    return f"{url}#{urlencode(files, quote_via=quote, safe='/')}"


def split_url_files(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its fragment, and the TLS file paths the fragment named."""
    base, _, fragment = url.partition("#")
    found = {k: v for k, v in parse_qsl(fragment) if k in URL_FILE_KEYS}
    return base, found


def client_context(
    *,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    key_password: str | None = None,
    insecure: bool = False,
) -> ssl.SSLContext:
    """A client TLS context; raises ``OSError``/``ssl.SSLError`` if a file cannot be loaded."""
    ctx = ssl.create_default_context(cafile=ca_file)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file, password=key_password)
    return ctx
