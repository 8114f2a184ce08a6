"""The embedded HTTP/1.1 target: an asyncio protocol with httptools request parsing.

``protobench serve http [--delay 5ms] [--status 200] [--body-size 13]
[--stall-at 10s --stall-for 1s]`` answers every request with one pre-encoded
response (``Hello, World!`` by default). It runs on the serve process's
uvloop and answers tens of thousands of requests per second per core.

* ``delay``: each response leaves ``delay`` after its request was parsed.
  libuv timers have a 1 ms granularity, too coarse for a reference server, so
  delayed responses are released by a small waker thread that sleeps, spins
  the last 0.5 ms, and wakes the loop that much ahead of time as the loop
  measurably takes to run (learned as it goes); a loop that runs sooner
  waits out the rest, so no response leaves early; pipelined requests are
  answered in order.
* ``stall_at``/``stall_for``: once, ``stall_at`` after the first request, the
  whole server blocks its event loop for ``stall_for`` (a stop-the-world pause).
* ``GET /__protobench__/stats`` returns ``{"served": N, "connections": M}``:
  the responses written so far (that request itself is not counted) and the
  connections accepted, so tests can check a generator's count against the
  server's.

The target binds loopback addresses only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from http import HTTPStatus
from ssl import SSLContext
from typing import ClassVar, cast

import httptools
from pydantic import Field

from protobench.hostutil import is_loopback_host
from protobench.profiles.model import Duration
from protobench.protocols.base import StrictModel
from protobench.targets.base import Announcement, EmbeddedTarget, Ready

STATS_PATH = "/__protobench__/stats"
_STATS_URL = STATS_PATH.encode("ascii")
_BODY_PATTERN = b"Hello, World!"
_PR_SET_TIMERSLACK = 29
_SWITCH_INTERVAL = 0.0002
"""GIL switch interval while delayed responses are pending: the waker thread gets in fast."""
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


_SPIN = 0.0005
"""The waker sleeps until this long before a due time, then spins: sleeps on a
virtual machine end 150-250 µs late even with a 1 ns timer slack."""
_MAX_ADVANCE = 0.001
"""At most this much of the loop's wake-up delay is compensated."""


def _precise_sleeps() -> None:
    """Make this thread's sleeps end on time: timer slack 1 ns instead of 50 µs (Linux)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)


class _Waker(threading.Thread):
    """Wakes the event loop when the next delayed response is due.

    The loop thread puts due times (``perf_counter`` seconds, non-decreasing)
    on ``dues``; this thread sleeps until each and then calls ``wake`` on the
    loop, once for every batch of due times that have passed.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, wake: Callable[[], None]) -> None:
        super().__init__(name="protobench-http-waker", daemon=True)
        self.dues: queue.SimpleQueue[float | None] = queue.SimpleQueue()
        self.advance = 0.0
        """How long before a due time to wake the loop: its measured wake-up delay."""
        self._loop = loop
        self._wake = wake

    def learn(self, wake_delay: float) -> None:
        """Fold one observed delay between a wake-up and the loop running it (EWMA)."""
        observed = min(max(wake_delay, 0.0), _MAX_ADVANCE)
        self.advance += (observed - self.advance) / 8

    def run(self) -> None:
        _precise_sleeps()
        pending: float | None = None
        while True:
            due = pending if pending is not None else self.dues.get()
            pending = None
            if due is None:
                return
            target = due - self.advance
            wait = target - time.perf_counter() - _SPIN
            if wait > 0:
                time.sleep(wait)
            while time.perf_counter() < target:
                pass
            stop = False
            while True:
                try:
                    following = self.dues.get_nowait()
                except queue.Empty:
                    break
                if following is None:
                    stop = True
                    break
                if following - self.advance > time.perf_counter():
                    pending = following
                    break
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:
                return
            if stop:
                return


class _ServerState:
    """What all connections of one server share: counters, responses, the delay queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop, options: HttpTargetOptions) -> None:
        self.loop = loop
        self.options = options
        self.response = encode_response(options.status, options.body_size)
        self.delay = options.delay
        self.served = 0
        self.connections = 0
        self.open: set[_ServerConnection] = set()
        self.first_request = True
        self.delayed: deque[tuple[float, _ServerConnection, bool, bool]] = deque()
        self.waker: _Waker | None = None
        if self.delay > 0:
            # The waker spins before each due time; hand the GIL over within 50 µs,
            # not the default 5 ms, so requests are parsed meanwhile.
            sys.setswitchinterval(_SPIN / 10)
            self.waker = _Waker(loop, self.release_due)
            self.waker.start()

    def on_first_request(self) -> None:
        self.first_request = False
        if self.options.stall_at is not None:
            self.loop.call_later(self.options.stall_at, time.sleep, self.options.stall_for)

    def schedule(self, conn: _ServerConnection, counted: bool, head: bool) -> None:
        due = time.perf_counter() + self.delay
        self.delayed.append((due, conn, counted, head))
        assert self.waker is not None
        self.waker.dues.put(due)

    def release_due(self) -> None:
        delayed = self.delayed
        now = time.perf_counter()
        waker = self.waker
        assert waker is not None
        if delayed:
            waker.learn(now - (delayed[0][0] - waker.advance))
        while delayed and delayed[0][0] <= now + waker.advance:
            due, conn, counted, head = delayed.popleft()
            while time.perf_counter() < due:
                pass  # woken up to `advance` early: never answer before the delay is over
            conn.pending -= 1
            conn.release(counted, head)

    def stop(self) -> None:
        if self.waker is not None:
            self.waker.dues.put(None)
        for conn in list(self.open):
            conn.abort()


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
        if not self._parser.should_keep_alive():
            self._closing = True
        if state.delay > 0:
            self.pending += 1
            state.schedule(self, counted, head)
        else:
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
        self._switch_interval = sys.getswitchinterval()
        if state.delay > 0:
            sys.setswitchinterval(_SWITCH_INTERVAL)
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
        sys.setswitchinterval(self._switch_interval)


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
