"""Helpers of the HTTP/2 tests: a scripted HTTP/2 server on a raw socket, sessions, a driver.

:func:`scripted_h2` is a loopback TCP server that speaks just enough HTTP/2 to
answer each request with bytes a test writes itself (a malformed frame, an
oversized header block, a RST_STREAM, a GOAWAY): it sends its SETTINGS first and
calls ``respond(stream_id)`` for every stream the client ends. The frames are
those of :mod:`protobench.protocols.http.h2.frames` (a server's responses are
frames like any other).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import hpack

from protobench.protocols.base import CallbackSession
from protobench.protocols.http.h2 import frames as f
from tests.support.http import open_session, raw_server

Respond = Callable[[int], bytes]


def response(stream: int, status: int = 200, body: bytes = b"hi") -> bytes:
    """A whole response: HEADERS (``:status`` only), then DATA with END_STREAM."""
    block = hpack.Encoder().encode([(":status", str(status))])
    if not body:
        return f.frame(f.HEADERS, f.END_HEADERS | f.END_STREAM, stream, block)
    return f.frame(f.HEADERS, f.END_HEADERS, stream, block) + f.frame(
        f.DATA, f.END_STREAM, stream, body
    )


@asynccontextmanager
async def scripted_h2(
    respond: Respond,
    settings: dict[int, int] | None = None,
    seen: list[tuple[int, int, bytes]] | None = None,
) -> AsyncIterator[str]:
    """A raw HTTP/2 server answering each ended stream with ``respond(stream)``; yields its URL.

    ``settings`` are the server's SETTINGS (none by default); the client's SETTINGS
    are acknowledged; every frame the client sends is appended to ``seen`` as
    ``(type, flags, payload)``.
    """
    buffers: dict[int, bytearray] = {}

    def on_data(transport: asyncio.Transport, data: bytes) -> None:
        buffer = buffers.get(id(transport))
        if buffer is None:
            buffer = buffers[id(transport)] = bytearray()
            transport.write(f.settings_frame(settings or {}))
        buffer += data
        if buffer.startswith(f.PREFACE):
            del buffer[: len(f.PREFACE)]
        out = bytearray()
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[:3], "big")
            if len(buffer) < 9 + length:
                break
            kind, flags = buffer[3], buffer[4]
            stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
            if seen is not None:
                seen.append((kind, flags, bytes(buffer[9 : 9 + length])))
            del buffer[: 9 + length]
            if kind == f.SETTINGS and not flags & f.ACK:
                out += f.frame(f.SETTINGS, f.ACK, 0)
            elif kind in (f.HEADERS, f.DATA) and flags & f.END_STREAM:
                out += respond(stream)
        if out and not transport.is_closing():
            transport.write(bytes(out))

    async with raw_server(on_data) as url:
        yield url


async def h2_session(url: str, streams: int = 1, **kwargs: Any) -> CallbackSession:
    """A session of the ``request`` op over h2c (``options`` may add more)."""
    options = {"version": "h2c", **kwargs.pop("options", {})}
    return await open_session(url, options=options, streams=streams, **kwargs)
