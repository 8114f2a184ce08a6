"""The embedded HTTP/1.1 target: an asyncio protocol with httptools request parsing.

``protobench serve http [--delay 5ms] [--status 200] [--body-size 13]
[--stall-at 10s --stall-for 1s]`` answers every request with one pre-encoded
response (``Hello, World!`` by default). It runs on the serve process's
uvloop and answers tens of thousands of requests per second per core.

* ``delay``: each response leaves ``delay`` after its request was parsed,
  never sooner, released by the loop's :class:`~protobench.targets.delays.DelayLine`
  (a ``timerfd``: libuv's own timers have a 1 ms granularity, too coarse for a
  reference server); pipelined requests are answered in order.
* ``stall_at``/``stall_for``: once, ``stall_at`` after the first request, the
  whole server blocks its event loop for ``stall_for`` (a stop-the-world pause).
* ``burn``: each request spins the CPU that long in :func:`burn_cpu`, a
  function a profile of the target names (``run --profile-target``: a server
  made slower on purpose, and where).
* ``GET /__protobench__/stats`` returns ``{"served": N, "connections": M}``:
  the responses written so far (that request itself is not counted) and the
  connections accepted, so tests can check a generator's count against the
  server's.

The target binds loopback addresses only.
"""

from __future__ import annotations

import asyncio
import json
import time
from http import HTTPStatus
from ssl import SSLContext
from typing import ClassVar, cast

import httptools
from pydantic import Field

from protobench.hostutil import is_loopback_host
from protobench.protocols.base import StrictModel
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.targets.delays import DelayLine
from protobench.vocab.fields import Duration

STATS_PATH = "/__protobench__/stats"
_STATS_URL = STATS_PATH.encode("ascii")
_BODY_PATTERN = b"Hello, World!"
_BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class HttpTargetOptions(StrictModel):
    """Options of ``protobench serve http`` (and of a profile's ``[serve]`` table)."""

    delay: Duration = Field(default=0.0, ge=0, le=60, description="delay of every response")
    status: int = Field(default=200, ge=200, le=599, description="status of every response")
    body_size: int = Field(default=13, ge=0, le=64 * 1024 * 1024, description="body bytes")
    stall_at: Duration | None = Field(
        default=None, description="stall the server once, this long after the first request"
    )
    stall_for: Duration = Field(default=1.0, ge=0, le=600, description="length of the stall")
    burn: Duration = Field(
        default=0.0, ge=0, le=1, description="CPU spent per request in burn_cpu (a known hot spot)"
    )


def encode_response(status: int, body_size: int) -> bytes:
    """The pre-encoded response: status line, a few headers, ``body_size`` bytes of body."""
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Status"
    head = f"HTTP/1.1 {status} {reason}\r\nServer: protobench\r\n"
    if status in (204, 304):
        return (head + "\r\n").encode("ascii")
    body = (_BODY_PATTERN * (body_size // len(_BODY_PATTERN) + 1))[:body_size]
    head += f"Content-Type: text/plain\r\nContent-Length: {body_size}\r\n\r\n"
    return head.encode("ascii") + body


def _json_response(payload: object) -> bytes:
    body = json.dumps(payload).encode("ascii")
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class _ServerState:
    """What all connections of one server share: counters, responses, the delay queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop, options: HttpTargetOptions) -> None:
        self.loop = loop
        self.options = options
        self.response = encode_response(options.status, options.body_size)
        self.served = 0
        self.connections = 0
        self.open: set[_ServerConnection] = set()
        self.first_request = True
        self.delay_ns = round(options.delay * 1e9)
        self.delays = DelayLine(loop)

    def on_first_request(self) -> None:
        self.first_request = False
        if self.options.stall_at is not None:
            self.loop.call_later(self.options.stall_at, time.sleep, self.options.stall_for)

    def stop(self) -> None:
        self.delays.close()
        for conn in list(self.open):
            conn.abort()


def burn_cpu(seconds: float) -> None:
    """Spin the CPU for ``seconds`` (the ``burn`` option): work a profiler sees here."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


class _ServerConnection(asyncio.Protocol):
    """One client connection: parse requests, answer each with the pre-encoded response."""

    def __init__(self, state: _ServerState) -> None:
        self._state = state
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._url = b""
        self.pending = 0
        self._closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._state.connections += 1
        self._state.open.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._state.open.discard(self)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def pause_writing(self) -> None:
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._transport is not None and not self._closing:
            self._transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._closing = True
            assert self._transport is not None
            self._transport.write(_BAD_REQUEST)
            self._transport.close()

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_message_complete(self) -> None:
        state = self._state
        counted = self._url != _STATS_URL
        self._url = b""
        if counted and state.first_request:
            state.on_first_request()
        head = self._parser.get_method() == b"HEAD"
        if state.options.burn:
            burn_cpu(state.options.burn)
        if not self._parser.should_keep_alive():
            self._closing = True
        if state.delay_ns > 0:
            self.pending += 1
            due = time.monotonic_ns() + state.delay_ns
            state.delays.call_at(due, self.release_delayed, counted, head)
        else:
            self.release(counted, head)

    def release_delayed(self, counted: bool, head: bool) -> None:
        self.pending -= 1
        self.release(counted, head)

    def release(self, counted: bool, head: bool) -> None:
        """Answer a request (delayed ones in request order); close if the client asked to.

        The stats response is built here, so it counts every response written before it.
        """
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        state = self._state
        if counted:
            state.served += 1
            response = state.response
        else:
            response = _json_response({"served": state.served, "connections": state.connections})
        if head:
            response = response[: response.index(b"\r\n\r\n") + 4]
        transport.write(response)
        if self._closing and self.pending == 0:
            transport.close()


class HttpServer:
    """A listening embedded HTTP server (what :func:`start_server` returns)."""

    def __init__(self, server: asyncio.Server, state: _ServerState, tls: bool) -> None:
        self._server = server
        self._state = state
        bound = server.sockets[0].getsockname()
        host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        self.port: int = bound[1]
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}/"

    @property
    def served(self) -> int:
        """Responses written so far (the stats endpoint not included)."""
        return self._state.served

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        return self._state.connections

    async def serve_forever(self) -> None:
        await self._server.serve_forever()

    def close(self) -> None:
        """Stop listening and drop every connection."""
        self._state.stop()
        self._server.close()


async def start_server(
    host: str, port: int, options: HttpTargetOptions, *, ssl: SSLContext | None = None
) -> HttpServer:
    """Listen on ``host:port`` (loopback only; 0 = any free port), optionally over TLS."""
    if not is_loopback_host(host):
        raise ValueError(
            "the http target binds loopback addresses only"
            f" (127.0.0.1, ::1, localhost), not {host!r}"
        )
    loop = asyncio.get_running_loop()
    state = _ServerState(loop, options)
    server = await loop.create_server(
        lambda: _ServerConnection(state), host, port, backlog=4096, reuse_address=True, ssl=ssl
    )
    return HttpServer(server, state, tls=ssl is not None)


class HttpTarget(EmbeddedTarget):
    """``protobench serve http``: a fast keep-alive HTTP/1.1 server with a fixed response."""

    name: ClassVar[str] = "http"
    description: ClassVar[str] = (
        "HTTP/1.1 keep-alive server with a fixed response (uvloop + httptools)"
    )
    options: ClassVar[type[StrictModel]] = HttpTargetOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, HttpTargetOptions)
        server = await start_server(host, port, options)
        try:
            ready(Announcement(url=server.url, kind="protobench http target"))
            await server.serve_forever()
        finally:
            server.close()
