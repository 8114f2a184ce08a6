"""The ``http`` protocol's one-line runs: ``protobench run http://HOST/PATH`` and its flags.

The flags are curl's, oha's and hey's (``-H``, ``-m``, ``--data``, ``-D``,
``-T``, ``-a``, ``-k``...); each sets a key of the ``http`` plugin's options or
of its ``request`` op (see :mod:`protobench.protocols.flags`). Also here, as it
is read both by a flag and by the plugin's options: the form of ``connect_to``.

Nothing here imports pydantic or httptools: ``--help`` reads it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from protobench.protocols.flags import OneLine, ProtocolFlag, key, switch

CONNECT_TO = "HOST:PORT or HOST1:PORT1:HOST2:PORT2"
"""The forms of ``connect_to``: where to connect, or where to connect for which URL host
and port (curl's and oha's ``--connect-to``; an empty HOST1 or PORT1 matches any)."""


def _fields(text: str) -> list[str]:
    """``a:b:[::1]:c`` -> ``["a", "b", "::1", "c"]`` (an IPv6 address in brackets)."""
    fields: list[str] = []
    rest = text
    while True:
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                raise ValueError(f"expected {CONNECT_TO}: an unclosed '['")
            fields.append(rest[1:end])
            rest = rest[end + 1 :]
            if rest and not rest.startswith(":"):
                raise ValueError(f"expected {CONNECT_TO}: ':' after ']'")
        else:
            field, _, _ = rest.partition(":")
            fields.append(field)
            rest = rest[len(field) :]
        if not rest:
            return fields
        rest = rest[1:]


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"expected a port 1-65535, got {text[:20]!r}")
    return int(text)


def connect_target(text: str) -> tuple[str | None, int | None, str, int]:
    """``(url_host, url_port, host, port)`` of a ``connect_to`` value: connect to
    ``host:port`` when the URL's host and port are these (``None``: any)."""
    fields = _fields(text.strip())
    if len(fields) == 2:
        fields = ["", "", *fields]
    if len(fields) != 4 or not fields[2]:
        raise ValueError(f"expected {CONNECT_TO}, got {text[:80]!r}")
    url_host, url_port, host, port = fields
    return (url_host or None, _port(url_port) if url_port else None, host, _port(port))


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _resolve(text: str) -> str:
    """curl's ``--resolve HOST:PORT:ADDRESS`` as a ``connect_to`` value."""
    host, _, rest = text.partition(":")
    port, _, address = rest.partition(":")
    address = address.removeprefix("[").removesuffix("]")
    if not host or not address:
        raise ValueError("expected HOST:PORT:ADDRESS, e.g. example.com:443:127.0.0.1")
    _port(port)
    return f"{host}:{port}:{_bracketed(address)}:{port}"


def _connect_to(text: str) -> str:
    connect_target(text)
    return text.strip()


def _header(text: str) -> tuple[str, str]:
    """``'Name: value'`` -> ``("Name", "value")``; ``@FILE`` -> ``("@", "FILE")`` (curl's)."""
    if text.startswith("@"):
        if len(text) == 1:
            raise ValueError("expected @FILE, a file of 'Name: value' lines")
        return "@", text[1:]
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise ValueError("expected 'Name: value' or @FILE")  # the value may be a secret: unsaid
    return name.strip(), value.strip()


def _headers(items: list[tuple[str, str]]) -> Mapping[str, Any]:
    files = [value for name, value in items if name == "@"]
    if len(files) > 1:
        raise ValueError("one @FILE of headers at most")
    out: dict[str, Any] = {}
    named = {name: value for name, value in items if name != "@"}
    if named:
        out["headers"] = named
    if files:
        out["headers_file"] = files[0]
    return out


def _auth(text: str) -> Mapping[str, Any]:
    user, colon, _ = text.partition(":")
    if not colon or not user:
        raise ValueError("expected USER:PASSWORD")  # never the value: it holds the password
    token = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return {"headers": {"Authorization": f"Basic {token}"}}


def _data(text: str) -> Mapping[str, Any]:
    if text.startswith("@"):
        return {"body_file": text[1:]}
    return {"body": text}


def _statuses(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError("expected statuses such as 200 or 200,201") from None


def _expect(values: list[list[int]]) -> Mapping[str, Any]:
    return {"expect_status": [status for value in values for status in value]}


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"expected a whole number of at least 1, got {text[:20]!r}")
    return int(text)


def _secret_headers(names: list[str]) -> Mapping[str, Any]:
    return {"secret_headers": list(names)}


FLAGS = (
    ProtocolFlag(
        name="method",
        flag="--method",
        short="-m",
        metavar="METHOD",
        help="HTTP method (default GET, or POST with a body).",
        scope="params",
        keys=("method",),
        parse=str.upper,
        to=key("method"),
    ),
    ProtocolFlag(
        name="data",
        flag="--data",
        metavar="BODY",
        help="Request body, or @FILE for a file's bytes (curl's; -d is the duration).",
        scope="params",
        keys=("body", "body_file"),
        to=_data,
    ),
    ProtocolFlag(
        name="body_file",
        flag="--body-file",
        short="-D",
        metavar="FILE",
        help="Request body from a file (oha's and hey's -D).",
        scope="params",
        keys=("body_file",),
        to=key("body_file"),
    ),
    ProtocolFlag(
        name="content_type",
        flag="--content-type",
        short="-T",
        metavar="TYPE",
        help="Content-Type header, e.g. application/json.",
        scope="params",
        keys=("headers",),
        to=lambda value: {"headers": {"Content-Type": value}},
    ),
    ProtocolFlag(
        name="auth",
        flag="--auth",
        short="-a",
        metavar="USER:PASSWORD",
        help="Basic authentication (a secret: never stored or printed).",
        scope="params",
        keys=("headers",),
        to=_auth,
        secret=True,
    ),
    ProtocolFlag(
        name="header",
        flag="--header",
        short="-H",
        metavar="HEADER",
        help="Request header 'Name: value' (repeatable), or @FILE of such lines.",
        scope="params",
        keys=("headers", "headers_file"),
        parse=_header,
        repeatable=True,
        to=_headers,
    ),
    ProtocolFlag(
        name="expect_status",
        flag="--expect-status",
        metavar="CODES",
        help="Statuses that count as success, e.g. 200,201 (default any 2xx).",
        scope="params",
        keys=("expect_status",),
        parse=_statuses,
        repeatable=True,
        to=_expect,
    ),
    ProtocolFlag(
        name="insecure",
        flag="--insecure",
        short="-k",
        help="Skip TLS certificate verification.",
        scope="options",
        keys=("insecure",),
        parse=None,
        to=switch("insecure", True),
    ),
    ProtocolFlag(
        name="ca_file",
        flag="--ca-file",
        metavar="FILE",
        help="PEM file of CAs to trust (curl's --cacert).",
        scope="options",
        keys=("ca_file",),
        to=key("ca_file"),
    ),
    ProtocolFlag(
        name="connect_to",
        flag="--connect-to",
        metavar="HOST:PORT",
        help="Connect there instead (Host and TLS name stay the URL's); also H1:P1:H2:P2.",
        scope="options",
        keys=("connect_to",),
        parse=_connect_to,
        to=key("connect_to"),
    ),
    ProtocolFlag(
        name="resolve",
        flag="--resolve",
        metavar="HOST:PORT:ADDR",
        help="curl's form of --connect-to: HOST:PORT of the URL is at ADDR.",
        scope="options",
        keys=("connect_to",),
        parse=_resolve,
        to=key("connect_to"),
    ),
    ProtocolFlag(
        name="disable_keepalive",
        flag="--disable-keepalive",
        help="A new connection for every request (Connection: close).",
        scope="options",
        keys=("keepalive",),
        parse=None,
        to=switch("keepalive", False),
    ),
    ProtocolFlag(
        name="http2",
        flag="--http2",
        help="HTTP/2: h2 by ALPN over https://, prior knowledge (h2c) over http://.",
        scope="options",
        keys=("version",),
        parse=None,
        to=switch("version", "2"),
    ),
    ProtocolFlag(
        name="h2c",
        flag="--h2c",
        help="HTTP/2 in cleartext with prior knowledge (curl's --http2-prior-knowledge).",
        scope="options",
        keys=("version",),
        parse=None,
        to=switch("version", "h2c"),
    ),
    ProtocolFlag(
        name="http2_fallback",
        flag="--http2-fallback",
        help="With --http2 over https://: take HTTP/1.1 when the server's ALPN chooses it.",
        scope="options",
        keys=("fallback",),
        parse=None,
        to=switch("fallback", True),
    ),
    ProtocolFlag(
        name="streams",
        flag="--streams",
        metavar="N",
        help="HTTP/2 streams in flight per connection (-c is then connections; oha's -p).",
        scope="params",
        keys=("streams",),
        parse=_count,
        to=key("streams"),
    ),
    ProtocolFlag(
        name="secret_header",
        flag="--secret-header",
        metavar="NAME",
        help="One more header whose value is never stored or printed (repeatable).",
        scope="options",
        keys=("secret_headers",),
        repeatable=True,
        to=_secret_headers,
    ),
)
"""The flags, in ``--help``'s order; ``-T`` and ``-a`` come before ``-H``, whose headers win."""

HTTP = OneLine(protocol="http", schemes=("http", "https"), op="request", flags=FLAGS)
