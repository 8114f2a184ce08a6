"""A minimal HTTP/1.1 request server protocol (httptools) for the Beckn endpoints.

Both Beckn servers are this protocol with a different handler: the mock BPP
(:mod:`protobench.targets.beckn`) and the BAP's callback listener
(:mod:`protobench.protocols.beckn.callbacks`). A handler gets the method, the
URL, the ``Authorization`` header and the body of each complete request and
returns the whole encoded response; responses go out in request order.
A connection idle for ``idle_timeout`` seconds (no request in progress) is
closed, as keep-alive servers do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

import httptools
import orjson

Handler = Callable[[bytes, bytes, str, bytes], bytes]
"""``(method, url, authorization, body) -> encoded response``."""

_BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def json_response(status: str, payload: object, extra_headers: str = "") -> bytes:
    """An encoded ``application/json`` response; ``status`` is e.g. ``"200 OK"``."""
    return json_bytes_response(status, orjson.dumps(payload), extra_headers)


def json_bytes_response(status: str, body: bytes, extra_headers: str = "") -> bytes:
    """:func:`json_response` of a body already encoded (one that was signed, say)."""
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"{extra_headers}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class HandlerProtocol(asyncio.Protocol):
    """One server connection: parse requests, answer each with ``handler``'s response."""

    def __init__(self, handler: Handler, idle_timeout: float | None = None) -> None:
        self._handler = handler
        self._idle_timeout = idle_timeout
        self._idle: asyncio.TimerHandle | None = None
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._url = b""
        self._authorization = b""
        self._body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle is not None:
            self._idle.cancel()

    def _arm_idle(self) -> None:
        if self._idle_timeout is not None and self._transport is not None:
            self._idle = asyncio.get_running_loop().call_later(
                self._idle_timeout, self._transport.close
            )

    def data_received(self, data: bytes) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            assert self._transport is not None
            self._transport.write(_BAD_REQUEST)
            self._transport.close()

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"authorization":
            self._authorization = value

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        response = self._handler(
            self._parser.get_method(),
            self._url,
            self._authorization.decode("latin-1"),
            b"".join(self._body),
        )
        self._url = b""
        self._authorization = b""
        self._body = []
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.write(response)
        if not self._parser.should_keep_alive():
            transport.close()
        else:
            self._arm_idle()
