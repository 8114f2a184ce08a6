"""Opening an HTTP/2 connection: h2 over TLS (ALPN), h2c with prior knowledge.

:func:`open_h2` connects, sends the preface and waits for the server's
SETTINGS, so a server that does not speak HTTP/2 is one clear error at open,
never a run of timeouts:

* over TLS the client offers ``h2`` and ``http/1.1`` (ALPN); a server that
  picks ``http/1.1`` is an error, unless ``fallback`` allows it: the TLS
  connection then carries an HTTP/1.1
  :class:`~protobench.protocols.http.client.HttpConnection` (no second
  handshake); a server that picks nothing is an error either way;
* in cleartext the preface is sent at once (RFC 9113 section 3.3); an HTTP/1
  server answers it with an HTTP/1 status line (an error naming it) or closes.
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from typing import cast

from protobench.protocols.http.client import Endpoint, HttpConnection, connect_errors
from protobench.protocols.http.h2.client import H2Connection
from protobench.protocols.timestamps.clock import Stamps
from protobench.protocols.timestamps.reactor import Reactor
from protobench.protocols.timestamps.transport import open_stamped
from protobench.vocab.errors import ErrorClass, OpError

ALPN = ("h2", "http/1.1")
"""What the client offers over TLS for HTTP/2."""


async def open_h2(
    endpoint: Endpoint,
    *,
    ssl: ssl_module.SSLContext | None,
    timeout: float,  # noqa: ASYNC109 - also the connection's request timeout
    fallback: bool = False,
    reactor: Reactor | None = None,
    stamps: Stamps | None = None,
) -> H2Connection | HttpConnection:
    """An open HTTP/2 connection to ``endpoint`` (or HTTP/1.1 where ``fallback`` allows it).

    ``ssl`` (offering :data:`ALPN`) is required for ``https``. With a
    ``reactor`` (the kernel's clock) an h2c connection is a socket of ours read
    with its receive stamps (:func:`~protobench.protocols.timestamps.transport.open_stamped`);
    over TLS the loop's transport reads it (the user clock). ``stamps`` are those
    of an HTTP/1.1 connection that a fallback gives (its session's). Raises
    :class:`OpError`: ``connect`` for a server that does not speak HTTP/2 (or
    any failure to connect, as HTTP/1.1's), ``timeout`` when its SETTINGS do
    not come within ``timeout``.
    """
    loop = asyncio.get_running_loop()
    tls = ssl if endpoint.tls else None
    if endpoint.tls and tls is None:
        raise OpError(ErrorClass.CONNECT, f"{endpoint.url}: https needs an SSL context")
    host, port = endpoint.address
    times = Stamps()
    transport: asyncio.Transport

    def factory() -> H2Connection:
        return H2Connection(loop, endpoint, timeout, tls is not None, times)

    with connect_errors(endpoint.where, timeout):
        async with asyncio.timeout(timeout):
            if reactor is not None and tls is None:
                made = await open_stamped(factory, host, port, reactor=reactor, stamps=times)
                transport, conn = made[0], cast(H2Connection, made[1])
            else:
                transport, conn = await loop.create_connection(
                    factory,
                    host,
                    port,
                    ssl=tls,
                    server_hostname=endpoint.host if tls is not None else None,
                )
    if tls is not None and conn.alpn != "h2":
        if conn.alpn == "http/1.1" and fallback:
            h1 = HttpConnection(loop, endpoint, timeout, stamps)
            transport.set_protocol(h1)
            h1.connection_made(transport)
            return h1
        transport.close()
        chose = f"chose {conn.alpn}" if conn.alpn else "negotiated no protocol (ALPN)"
        advice = " (allow the fallback to HTTP/1.1 with fallback = true)" if conn.alpn else ""
        raise OpError(
            ErrorClass.CONNECT,
            f"{endpoint.url} does not speak HTTP/2 over TLS: offered h2, the server {chose}"
            f"{advice}",
        )
    try:
        async with asyncio.timeout(timeout):
            await conn.ready
    except TimeoutError:
        conn.abort(OpError(ErrorClass.TIMEOUT, "no HTTP/2 SETTINGS"))
        raise OpError(
            ErrorClass.TIMEOUT,
            f"{endpoint.url} sent no HTTP/2 SETTINGS within {timeout:g}s: "
            "it does not seem to speak HTTP/2"
            + ("" if tls is not None else " with prior knowledge (h2c)"),
        ) from None
    except OpError as exc:
        if exc.error_class is ErrorClass.CLOSED and tls is None:
            raise OpError(
                ErrorClass.CONNECT,
                f"{endpoint.url} closed the connection on the HTTP/2 preface: it does not "
                "speak cleartext HTTP/2 with prior knowledge (h2c)",
            ) from None
        raise OpError(ErrorClass.CONNECT, exc.detail) from None
    return conn
