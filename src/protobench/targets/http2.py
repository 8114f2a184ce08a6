"""The embedded HTTP target's HTTP/2 side: one connection served with the ``h2`` package.

:class:`H2ServerConnection` takes over a connection of the HTTP target
(:mod:`protobench.targets.http`) that began with the HTTP/2 preface (h2c with
prior knowledge) or negotiated ``h2`` by ALPN, and answers every request as the
HTTP/1.1 side does: the same status, body, delay (each response leaves
``delay`` after its request ended, released by the target's delay line) and
counting (:class:`Responder`). Bodies go out as the client's flow-control
windows allow.

For tests of a client's HTTP/2 behaviour it can also (:class:`H2Settings`):
advertise SETTINGS_MAX_CONCURRENT_STREAMS and SETTINGS_INITIAL_WINDOW_SIZE,
never open its receive windows (``stall_window``: a request body larger than
the window stalls), reset every Nth stream (RST_STREAM with ``reset_code``)
and go away after N streams on a connection (GOAWAY with NO_ERROR and that
stream as the last: the streams below finish, the connection closes after).

The ``h2`` package (an implementation we did not write) is the server's codec;
it answers a few thousand requests per second per core, fewer than the
HTTP/1.1 side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@dataclass(frozen=True)
class H2Settings:
    """How the HTTP/2 side behaves (see the module)."""

    max_streams: int = 128
    window: int = 65535
    stall_window: bool = False
    reset_every: int = 0
    reset_code: int = 7
    goaway_after: int = 0


class Responder(Protocol):
    """What the HTTP target shares with its HTTP/2 connections."""

    delay_ns: int

    def answer(self, path: bytes, head: bool) -> tuple[int, list[tuple[str, str]], bytes]:
        """Count a request and give its response: status, headers, body (``head``: none)."""
        ...

    def later(self, due_ns: int, callback: Callable[[], None]) -> None:
        """Call ``callback`` at ``due_ns`` (``time.monotonic_ns``) on the delay line."""
        ...

    def opened(self, conn: asyncio.Protocol) -> None: ...

    def closed(self, conn: asyncio.Protocol) -> None: ...


class H2ServerConnection(asyncio.Protocol):
    """One HTTP/2 connection of the HTTP target (see the module)."""

    def __init__(self, responder: Responder, settings: H2Settings) -> None:
        self._responder = responder
        self._settings = settings
        self._transport: asyncio.Transport | None = None
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self._conn = h2.connection.H2Connection(config)
        self._requests: dict[int, tuple[bytes, bool]] = {}
        self._pending: dict[int, memoryview] = {}
        """Bodies waiting for the client's windows."""
        self._seen = 0
        self._goaway = 0
        self._in_flight = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._responder.opened(self)
        settings = self._settings
        self._conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: settings.max_streams,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: settings.window,
            },
        )
        self._conn.initiate_connection()
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._responder.closed(self)
        self._transport = None

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        try:
            events = self._conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self._flush()
            if self._transport is not None:
                self._transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self._request(event)
            elif isinstance(event, h2.events.DataReceived):
                if not self._settings.stall_window and event.flow_controlled_length:
                    self._conn.acknowledge_received_data(
                        event.flow_controlled_length, event.stream_id
                    )
            elif isinstance(event, h2.events.StreamEnded):
                self._ended(event.stream_id)
            elif isinstance(event, h2.events.WindowUpdated):
                self._send_pending()
            elif isinstance(event, h2.events.StreamReset):
                self._requests.pop(event.stream_id, None)
                self._pending.pop(event.stream_id, None)
        self._flush()

    def _request(self, event: h2.events.RequestReceived) -> None:
        sid = event.stream_id
        if self._goaway and sid > self._goaway:
            return  # after our GOAWAY: not processed, the client sends it again elsewhere
        headers = dict(event.headers or [])
        path = headers.get(b":path", b"/")
        head = headers.get(b":method") == b"HEAD"
        self._requests[sid] = (path if isinstance(path, bytes) else path.encode(), head)
        self._seen += 1
        settings = self._settings
        if settings.goaway_after and self._seen == settings.goaway_after:
            # The frame alone: h2's close_connection would refuse the responses still due.
            self._goaway = sid
            self._flush()
            if self._transport is not None:
                self._transport.write(GoAwayFrame(0, last_stream_id=sid, error_code=0).serialize())

    def _ended(self, sid: int) -> None:
        request = self._requests.pop(sid, None)
        if request is None:
            return
        reset = self._settings.reset_every
        if reset and sid // 2 % reset == reset - 1:
            self._conn.reset_stream(sid, self._settings.reset_code)
            return
        path, head = request
        self._in_flight += 1
        delay = self._responder.delay_ns
        if delay > 0:
            self._responder.later(
                time.monotonic_ns() + delay, lambda: self._respond(sid, path, head)
            )
        else:
            self._respond(sid, path, head)

    def _respond(self, sid: int, path: bytes, head: bool) -> None:
        self._in_flight -= 1
        if self._transport is None or self._transport.is_closing():
            return
        status, headers, body = self._responder.answer(path, head)
        fields = [(":status", str(status)), *headers]
        try:
            self._conn.send_headers(sid, fields, end_stream=not body)
            if body:
                self._pending[sid] = memoryview(body)
                self._send_pending()
        except h2.exceptions.StreamClosedError:
            self._pending.pop(sid, None)
        self._flush()
        self._close_after_goaway()

    def _send_pending(self) -> None:
        conn = self._conn
        for sid in list(self._pending):
            body = self._pending[sid]
            while body:
                size = min(
                    conn.local_flow_control_window(sid), conn.max_outbound_frame_size, len(body)
                )
                if size <= 0:
                    break
                conn.send_data(sid, body[:size].tobytes(), end_stream=size == len(body))
                body = body[size:]
            if body:
                self._pending[sid] = body
            else:
                del self._pending[sid]

    def _close_after_goaway(self) -> None:
        if (
            self._goaway
            and not self._in_flight
            and not self._pending
            and self._transport is not None
        ):
            self._transport.close()

    def _flush(self) -> None:
        data = self._conn.data_to_send()
        if data and self._transport is not None:
            self._transport.write(data)
