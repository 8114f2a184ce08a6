"""The embedded HTTP target: HTTP/1.1 on an asyncio protocol with httptools, and HTTP/2.

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
* HTTP/2 on the same port (:mod:`protobench.targets.http2`): a connection that
  begins with the HTTP/2 preface is h2c with prior knowledge; with ``tls``
  the target serves ``https://`` with certificates from a mock CA
  (:mod:`protobench.tlsutil`, named in the announced URL's fragment) and
  offers ``h2`` and ``http/1.1`` by ALPN (``h2 = false``: an HTTP/1.1-only
  server, which answers the h2c preface with 400). The same delays, statuses
  and bodies; ``h2_max_streams``, ``h2_window``, ``h2_stall_window``,
  ``h2_reset_every`` (with ``h2_reset_code``) and ``h2_goaway_after`` shape its
  HTTP/2 for tests.

The target binds loopback addresses only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import tempfile
import time
from collections.abc import Callable
from http import HTTPStatus
from ssl import SSLContext
from typing import ClassVar, cast

import httptools
from pydantic import Field

from protobench.hostutil import is_loopback_host
from protobench.protocols.base import StrictModel
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.targets.delays import DelayLine
from protobench.targets.http2 import PREFACE, H2ServerConnection, H2Settings
from protobench.tlsutil import generate, url_with_files
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
    tls: bool = Field(default=False, description="https:// with certificates of a mock CA")
    h2: bool = Field(
        default=True,
        description="speak HTTP/2 (h2c by prior knowledge, h2 by ALPN); false: HTTP/1.1 only",
    )
    h2_max_streams: int = Field(
        default=128, ge=0, le=2**31 - 1, description="HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS"
    )
    h2_window: int = Field(
        default=65535, ge=0, le=2**31 - 1, description="HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE"
    )
    h2_stall_window: bool = Field(
        default=False, description="HTTP/2: never send WINDOW_UPDATE (request bodies stall)"
    )
    h2_reset_every: int = Field(
        default=0, ge=0, le=1_000_000, description="HTTP/2: reset every Nth stream (0: none)"
    )
    h2_reset_code: int = Field(
        default=7,
        ge=0,
        le=2**32 - 1,
        description="HTTP/2: the reset's error code (7: REFUSED_STREAM)",
    )
    h2_goaway_after: int = Field(
        default=0,
        ge=0,
        le=1_000_000,
        description="HTTP/2: GOAWAY after this many streams on a connection (0: never)",
    )

    def h2_settings(self) -> H2Settings:
        """The HTTP/2 side's settings."""
        return H2Settings(
            max_streams=self.h2_max_streams,
            window=self.h2_window,
            stall_window=self.h2_stall_window,
            reset_every=self.h2_reset_every,
            reset_code=self.h2_reset_code,
            goaway_after=self.h2_goaway_after,
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
    """What all connections of one server share: counters, responses, the delay queue.

    It is the :class:`~protobench.targets.http2.Responder` of the HTTP/2 connections.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, options: HttpTargetOptions) -> None:
        self.loop = loop
        self.options = options
        self.response = encode_response(options.status, options.body_size)
        self.served = 0
        self.connections = 0
        self.open: set[asyncio.Protocol] = set()
        self.first_request = True
        self.delay_ns = round(options.delay * 1e9)
        self.delays = DelayLine(loop)
        self.h2 = options.h2_settings()
        body = (_BODY_PATTERN * (options.body_size // len(_BODY_PATTERN) + 1))[: options.body_size]
        self.h2_body = b"" if options.status in (204, 304) else body
        self.h2_headers = [("server", "protobench")]
        if self.h2_body or options.status not in (204, 304):
            self.h2_headers += [("content-type", "text/plain"), ("content-length", str(len(body)))]

    def answer(self, path: bytes, head: bool) -> tuple[int, list[tuple[str, str]], bytes]:
        """An HTTP/2 request's response (counted as the HTTP/1.1 side counts)."""
        if path == _STATS_URL:
            stats = json.dumps({"served": self.served, "connections": self.connections})
            body = stats.encode("ascii")
            return 200, [("content-type", "application/json")], b"" if head else body
        if self.first_request:
            self.on_first_request()
        if self.options.burn:
            burn_cpu(self.options.burn)
        self.served += 1
        return self.options.status, self.h2_headers, b"" if head else self.h2_body

    def later(self, due_ns: int, callback: Callable[[], None]) -> None:
        self.delays.call_at(due_ns, callback)

    def opened(self, conn: asyncio.Protocol) -> None:
        self.open.add(conn)

    def closed(self, conn: asyncio.Protocol) -> None:
        self.open.discard(conn)

    def on_first_request(self) -> None:
        self.first_request = False
        if self.options.stall_at is not None:
            self.loop.call_later(self.options.stall_at, time.sleep, self.options.stall_for)

    def stop(self) -> None:
        self.delays.close()
        for conn in list(self.open):
            if isinstance(conn, _ServerConnection | H2ServerConnection):
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
        self._first = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._state.connections += 1
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
            self._to_h2(b"")
            return
        self._state.open.add(self)
        self._first = True

    def _to_h2(self, data: bytes) -> None:
        """Hand the connection to the HTTP/2 side (h2 by ALPN, or h2c's preface in ``data``)."""
        transport = self._transport
        assert transport is not None
        self._state.open.discard(self)
        conn = H2ServerConnection(self._state, self._state.h2)
        transport.set_protocol(conn)
        conn.connection_made(transport)
        if data:
            conn.data_received(data)

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
        if self._first:
            self._first = False
            if data.startswith(PREFACE[:14]) and self._state.options.h2:  # "PRI * HTTP/2.0"
                self._to_h2(data)
                return
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
        with contextlib.ExitStack() as stack:
            context = None
            files: dict[str, str] = {}
            if options.tls:
                workdir = stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="protobench-http-")
                )
                pki = generate(workdir, ["server"])
                context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                leaf = pki.leaves["server"]
                context.load_cert_chain(str(leaf.cert), str(leaf.key))
                context.set_alpn_protocols(["h2", "http/1.1"] if options.h2 else ["http/1.1"])
                files = {"ca_file": str(pki.ca.cert)}
            server = await start_server(host, port, options, ssl=context)
            try:
                url = url_with_files(server.url, files)
                ready(Announcement(url=url, kind="protobench http target"))
                await server.serve_forever()
            finally:
                server.close()
