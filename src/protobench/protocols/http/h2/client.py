"""One HTTP/2 client connection: many streams in flight, each completed by a callback.

:class:`H2Connection` is an ``asyncio.Protocol`` with its own framing
(:mod:`.frames`) and HPACK decoder (:mod:`.headers`); it is opened by
:mod:`.opening` (which waits for the server's SETTINGS) and shared by the
sessions of a :class:`~.link.H2Link`. The hot path:

* :meth:`H2Connection.submit` starts a stream: a pre-encoded request
  (:class:`~.frames.RequestFrames`) with its stream id filled in. Streams
  started while the connection handles a read (a completion's callback starts
  the next request) are written together, in one ``write`` after the read;
  others are written at once;
* a read is parsed frame by frame in place; a response's HEADERS give its
  ``:status`` (the decoder keeps what it decoded: the same block again costs a
  dictionary look-up) and the frame with END_STREAM completes the stream:
  ``done(None, bytes)`` for an accepted status, ``done(status error, bytes)``
  otherwise (a second HEADERS frame, the trailers, may end it too).

The protocol, as RFC 9113 has it: the SETTINGS exchange (ours: no push, a
16 MiB stream window, a 1 GiB connection window; the server's ACKed and
applied: MAX_CONCURRENT_STREAMS bounds the streams in flight, the others wait
in order), flow control both ways (WINDOW_UPDATE once half a window is used; a
request body waits for the server's windows and a request whose body could not
go out in time fails as ``timeout`` with code ``h2:stalled-window``), PING
answered, GOAWAY (the streams up to its last stream id finish, the later ones
go back to :attr:`~H2Connection.on_unavailable` to be sent again on a new
connection, at most once each), RST_STREAM (the stream fails as ``protocol``
with code ``h2:CODE``), 1xx responses skipped.

Errors, mapped here (:mod:`protobench.protocols.base`): a status not accepted
is ``protocol`` with the status as code (as HTTP/1.1's); RST_STREAM is
``protocol`` ``h2:REFUSED_STREAM``, ``h2:CANCEL``...; a frame or header block
that breaks the protocol is a connection error: GOAWAY with its code, the
connection closed, every stream failing as ``protocol`` ``h2:PROTOCOL_ERROR``
(``FRAME_SIZE_ERROR``, ``COMPRESSION_ERROR``...) naming what was wrong; a
GOAWAY with an error code fails the streams it drops as ``protocol``
``h2:CODE``; a connection closed or reset under streams in flight fails them
as ``closed``; a stream without a reply within the timeout fails as
``timeout`` and is cancelled (RST_STREAM CANCEL), and when nothing at all came
from the server since that stream started, the connection is dropped too.

Memory is bounded: a read keeps at most one frame's partial bytes (frames are
at most 16 KiB: our SETTINGS_MAX_FRAME_SIZE), a header block at most
``MAX_HEADER_BLOCK`` bytes, bodies are counted, never kept.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import deque
from collections.abc import Callable
from typing import cast

from protobench.protocols.base import Done
from protobench.protocols.http.client import SUCCESS, Endpoint, status_error
from protobench.protocols.http.h2 import frames as f
from protobench.protocols.http.h2.headers import HeaderDecoder, HpackError
from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.protocols.timestamps.transport import StampedTransport
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally

STREAM_WINDOW = 1 << 24
"""Our SETTINGS_INITIAL_WINDOW_SIZE: what a server may send on a stream before we update it."""
CONNECTION_WINDOW = 1 << 30
"""Our connection receive window (raised from 65,535 by a WINDOW_UPDATE after the preface)."""
HALF_CONNECTION_WINDOW = CONNECTION_WINDOW // 2
MAX_HEADER_BLOCK = 65536
"""The largest header block (HEADERS + CONTINUATION) or decoded header list we take."""
MAX_FRAME = f.DEFAULT_MAX_FRAME
"""Our SETTINGS_MAX_FRAME_SIZE: larger frames are a FRAME_SIZE_ERROR."""
CLIENT_SETTINGS = {
    f.SETTINGS_ENABLE_PUSH: 0,
    f.SETTINGS_INITIAL_WINDOW_SIZE: STREAM_WINDOW,
    f.SETTINGS_MAX_HEADER_LIST_SIZE: MAX_HEADER_BLOCK,
}
_pack_sid = struct.Struct(">L").pack
MAX_ID = f.MAX_STREAM_ID
UNLIMITED_STREAMS = 1 << 31
"""The server's concurrency limit until it says one (RFC 9113: no limit)."""

Unavailable = Callable[[f.RequestFrames, Stamps, Done, bool], None]
"""Takes a request the connection cannot carry: ``(request, stamps, done, retry)``; ``retry``
is true when the server dropped it unprocessed (GOAWAY), so it may be sent once more."""


class ConnectionError_(OpError):
    """A connection error of ours: what to put in GOAWAY, and the streams' error."""

    def __init__(self, code: f.ErrorCode, detail: str) -> None:
        super().__init__(ErrorClass.PROTOCOL, detail, code=f"h2:{code.name}")
        self.h2_code = code


class _Stream:
    """A stream in flight: its completion, its request, what came back so far."""

    __slots__ = (
        "body_sent",
        "done",
        "nbytes",
        "received",
        "request",
        "retried",
        "stamps",
        "started",
        "status",
    )

    def __init__(
        self, done: Done, request: f.RequestFrames, stamps: Stamps, started: float, retried: bool
    ) -> None:
        self.done = done
        self.request = request
        self.stamps = stamps
        self.started = started
        self.retried = retried
        self.status = 0
        self.nbytes = 0
        self.received = 0
        """DATA bytes received since our last WINDOW_UPDATE of the stream."""
        self.body_sent = -1
        """Bytes of the body sent while it waits for a window (-1: all sent)."""


class H2Connection(asyncio.Protocol):
    """One HTTP/2 connection (see the module). Open it with :func:`.opening.open_h2`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        endpoint: Endpoint,
        timeout: float,
        tls: bool,
        stamps: Stamps | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.stamps = stamps if stamps is not None else Stamps()
        """The transport's times: a stamped transport puts the kernel's receive stamp of each
        read here; a completion hands it to its stream's own stamps."""
        self._write_request: Callable[[bytes], None] = self._stamp_and_write
        self.timeout = timeout
        self.tls = tls
        self.accept = SUCCESS
        """Statuses reported as success; others are ``protocol`` errors."""
        self.sent = Tally()
        """Bytes of the frames written (a session sets its op's tally)."""
        self.on_unavailable: Unavailable | None = None
        """Takes the requests this connection cannot carry (gone away, closed)."""
        self.on_queued: Callable[[], None] | None = None
        """Called when a request waits for the server's concurrency limit."""
        self.alpn: str | None = None
        """The protocol TLS negotiated (ALPN), ``None`` for h2c or none."""
        self.ready: asyncio.Future[None] = loop.create_future()
        """Done once the server's SETTINGS came (or with the error that came instead)."""
        self.alive = False
        """Whether the connection takes new streams (open, not going away)."""
        self.last_stream = 0
        self.goaway_code: int | None = None
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._decoder = HeaderDecoder(max_list=MAX_HEADER_BLOCK)
        self._streams: dict[int, _Stream] = {}
        self._waiting: deque[tuple[f.RequestFrames, Stamps, Done, bool, float]] = deque()
        self._blocked: list[int] = []
        """Streams whose body waits for a window, in order."""
        self._next_id = 1
        self._limit = UNLIMITED_STREAMS
        self._peer_window = f.DEFAULT_WINDOW
        self._send_window = f.DEFAULT_WINDOW
        self._stream_windows: dict[int, int] = {}
        """Send windows of the streams whose body is not all sent."""
        self._peer_max_frame = f.DEFAULT_MAX_FRAME
        self._received = 0
        """DATA bytes received since our last connection WINDOW_UPDATE."""
        self._buffer = b""
        self._block: bytearray | None = None
        self._block_stream = 0
        self._block_flags = 0
        self._block_nbytes = 0
        self._reading = False
        self._out: list[bytes] = []
        self._out_stamps: list[Stamps] = []
        """The stamps of the requests in :attr:`_out`, stamped when it is written."""
        self._timer: asyncio.TimerHandle | None = None
        self._heard = 0.0
        """When the last bytes came from the server (loop time)."""
        self._settings_seen = False
        self._closing_error: OpError | None = None

    # -- opening and closing ------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        if isinstance(transport, StampedTransport):
            self._write_request = transport.write_request
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            ssl_object = transport.get_extra_info("ssl_object")
            self.alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
            if self.alpn != "h2":
                self.ready.set_result(None)  # the opener reads alpn and decides
                return
        self.alive = True
        self._heard = self._loop.time()
        self._transport.write(
            f.PREFACE
            + f.settings_frame(CLIENT_SETTINGS)
            + f.window_update(0, CONNECTION_WINDOW - f.DEFAULT_WINDOW)
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        error = self._closing_error
        if error is None:
            detail = (
                f"connection reset by the peer ({exc})"
                if exc is not None
                else "connection closed by the peer"
            )
            error = OpError(ErrorClass.CLOSED, detail)
        if not self.ready.done():
            self.ready.set_exception(error)
        self._fail_all(error)

    def close(self) -> None:
        """Close the connection (GOAWAY, then the socket); streams in flight fail as ``closed``.
        Idempotent."""
        self.alive = False
        transport = self._transport
        if transport is not None and not transport.is_closing():
            if self._settings_seen:
                transport.write(f.goaway(0, f.ErrorCode.NO_ERROR))
            transport.close()
        if self._closing_error is None:
            self._closing_error = OpError(ErrorClass.CLOSED, "connection closed by the client")
        self._fail_all(self._closing_error)

    def abort(self, error: OpError) -> None:
        """Drop the connection at once; streams in flight fail with ``error``."""
        self.alive = False
        self._closing_error = error
        if self._transport is not None:
            self._transport.abort()
        if not self.ready.done():
            self.ready.set_exception(error)
        self._fail_all(error)

    @property
    def streams(self) -> int:
        """Streams in flight (sent, not complete)."""
        return len(self._streams)

    @property
    def limit(self) -> int:
        """The server's SETTINGS_MAX_CONCURRENT_STREAMS (2**31 until it says one)."""
        return self._limit

    # -- requests -------------------------------------------------------------

    def submit(
        self, request: f.RequestFrames, stamps: Stamps, done: Done, retried: bool = False
    ) -> None:
        """Start a stream for ``request``; ``done(error_or_None, bytes)`` when it ends.

        ``stamps`` are the session's: its send is stamped just before the write that
        sends it, its reply's kernel receive stamp (where read) set before ``done``.
        """
        streams = self._streams
        sid = self._next_id
        if not (self.alive and request.simple) or len(streams) >= self._limit or sid > MAX_ID:
            self._submit_other(request, stamps, done, retried, self._loop.time())
            return
        self._next_id = sid + 2
        started = self._loop.time()
        streams[sid] = _Stream(done, request, stamps, started, retried)
        if self._timer is None:
            self._timer = self._loop.call_at(started + self.timeout, self._on_timer)
        data = request.head_start + _pack_sid(sid) + request.head_rest
        self.sent.n += len(data)
        if self._reading:
            self._out.append(data)
            self._out_stamps.append(stamps)
        else:
            self._write_request(data)
            stamps.sent = self.stamps.sent

    def _stamp_and_write(self, data: bytes) -> None:
        """Send requests on the loop's transport, stamped just before (the user clock)."""
        self.stamps.sent = perf_ns()
        self._transport.write(data)  # type: ignore[union-attr]

    def _submit_other(
        self, request: f.RequestFrames, stamps: Stamps, done: Done, retried: bool, started: float
    ) -> None:
        """A request off the fast path: no connection, no room, no stream id left, a body."""
        if not self.alive:
            self._unavailable(request, stamps, done, False)
        elif len(self._streams) >= self._limit:
            self._waiting.append((request, stamps, done, retried, started))
            if self.on_queued is not None:
                self.on_queued()
        else:
            self._start(request, stamps, done, retried, started)

    def _start(
        self, request: f.RequestFrames, stamps: Stamps, done: Done, retried: bool, started: float
    ) -> None:
        sid = self._next_id
        if sid > MAX_ID:  # stream ids used up: a new connection takes the rest
            self.alive = False
            self._unavailable(request, stamps, done, False)
            if not self._streams:
                self.close()
            return
        self._next_id = sid + 2
        stream = _Stream(done, request, stamps, started, retried)
        self._streams[sid] = stream
        if self._timer is None:
            self._timer = self._loop.call_at(started + self.timeout, self._on_timer)
        data = request.for_stream(sid)
        body = request.body
        if body:
            window = self._peer_window
            if body <= window and body <= self._send_window:
                self._send_window -= body
                data += request.body_for_stream(sid)
            else:
                self._stream_windows[sid] = window
                stream.body_sent = 0
                self._blocked.append(sid)
        self.sent.n += len(data)
        if self._reading:
            self._out.append(data)
            self._out_stamps.append(stamps)
        elif self._transport is not None:
            self._write_request(data)
            stamps.sent = self.stamps.sent
        if stream.body_sent >= 0:
            self._send_blocked()

    def _send_blocked(self) -> None:
        """Send what the windows allow of the bodies that wait, in the order they came."""
        for sid in list(self._blocked):
            if self._send_window <= 0:
                return
            stream = self._streams.get(sid)
            if stream is None or stream.body_sent < 0:
                self._blocked.remove(sid)
                self._stream_windows.pop(sid, None)
                continue
            body = stream.request.payload
            while stream.body_sent < len(body):
                window = min(self._stream_windows[sid], self._send_window, self._peer_max_frame)
                if window <= 0:
                    break
                piece = body[stream.body_sent : stream.body_sent + window]
                stream.body_sent += len(piece)
                self._stream_windows[sid] -= len(piece)
                self._send_window -= len(piece)
                last = stream.body_sent >= len(body)
                self._write(f.frame(f.DATA, f.END_STREAM if last else 0, sid, piece))
            if stream.body_sent >= len(body):
                stream.body_sent = -1
                self._blocked.remove(sid)
                self._stream_windows.pop(sid, None)

    def _write(self, data: bytes) -> None:
        """Send frames that are no request's start (they stamp nothing)."""
        self.sent.n += len(data)
        if self._reading:
            self._out.append(data)
        elif self._transport is not None:
            self._transport.write(data)

    def _unavailable(
        self, request: f.RequestFrames, stamps: Stamps, done: Done, retry: bool
    ) -> None:
        if self.on_unavailable is not None:
            self.on_unavailable(request, stamps, done, retry)
        else:
            done(self._closing_error or OpError(ErrorClass.CLOSED, "connection closed"), 0)

    # -- reading --------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self._reading = True
        try:
            self._frames(self._buffer + data if self._buffer else data)
        except ConnectionError_ as exc:
            self._connection_error(exc)
        finally:
            self._reading = False
            out = self._out
            if out:
                self._out = []
                transport = self._transport
                if transport is not None and not transport.is_closing():
                    self._write_request(out[0] if len(out) == 1 else b"".join(out))
                    sent = self.stamps.sent
                    for stamps in self._out_stamps:
                        stamps.sent = sent
                self._out_stamps.clear()

    def _frames(self, buf: bytes) -> None:
        unpack = f.unpack_header
        streams = self._streams
        decode = self._decoder.status
        end = len(buf)
        pos = 0
        self._heard = self._loop.time()
        if not self._settings_seen:
            self._check_preface(buf)
        while end - pos >= 9:
            high, low, kind, flags, sid = unpack(buf, pos)
            length = (high << 16) | low
            if length > MAX_FRAME:
                raise ConnectionError_(
                    f.ErrorCode.FRAME_SIZE_ERROR,
                    f"a frame of {length} bytes, above our SETTINGS_MAX_FRAME_SIZE of {MAX_FRAME}",
                )
            start = pos + 9
            if end - start < length:
                break
            pos = start + length
            sid &= 0x7FFFFFFF
            if self._block is not None and kind != f.CONTINUATION:
                raise ConnectionError_(
                    f.ErrorCode.PROTOCOL_ERROR,
                    f"frame type {kind} inside a header block (CONTINUATION expected)",
                )
            if kind == 0:  # DATA
                if flags == 1 and sid:  # END_STREAM, no padding: a response's end
                    stream = streams.get(sid)
                    if stream is not None and stream.status:
                        self._received += length
                        if self._received >= HALF_CONNECTION_WINDOW:
                            self._write(f.window_update(0, self._received))
                            self._received = 0
                        stream.nbytes += 9 + length
                        self._complete(sid, stream)
                        continue
                self._data(buf[start:pos], flags, sid, length)
            elif kind == 1:  # HEADERS
                if flags == 4 and sid:  # END_HEADERS: a response's head
                    try:
                        status = decode(buf[start:pos])
                    except HpackError as exc:
                        raise ConnectionError_(f.ErrorCode.COMPRESSION_ERROR, str(exc)) from None
                    stream = streams.get(sid)
                    if stream is not None and not stream.status and status >= 200:
                        stream.status = status
                        stream.nbytes += 9 + length
                        continue
                    self._decoded_block(status, flags, sid, 9 + length)
                    continue
                self._headers(buf[start:pos], flags, sid, length)
            else:
                self._control(kind, flags, sid, buf[start:pos])
        self._buffer = buf[pos:] if pos < end else b""

    def _check_preface(self, buf: bytes) -> None:
        """The server's first frame must be SETTINGS (RFC 9113 section 3.4)."""
        if buf[:5].upper().startswith(b"HTTP/"):
            line = buf.split(b"\r\n", 1)[0][:80].decode("ascii", "replace")
            raise ConnectionError_(
                f.ErrorCode.PROTOCOL_ERROR,
                f"{self.endpoint.url} answered in HTTP/1 ({line!r}), not HTTP/2: it does not "
                "speak cleartext HTTP/2 with prior knowledge (h2c)",
            )
        if len(buf) >= 4 and buf[3] != f.SETTINGS:
            raise ConnectionError_(
                f.ErrorCode.PROTOCOL_ERROR,
                f"{self.endpoint.url} did not start with an HTTP/2 SETTINGS frame: "
                "it does not speak HTTP/2",
            )

    def _data(self, payload: bytes, flags: int, sid: int, length: int) -> None:
        if sid == 0:
            raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "DATA on stream 0")
        received = self._received + length
        if received >= HALF_CONNECTION_WINDOW:
            self._write(f.window_update(0, received))
            received = 0
        self._received = received
        if flags & f.PADDED:
            _strip_padding(payload)
        stream = self._streams.get(sid)
        if stream is None:
            self._unknown_stream(sid, "DATA")
            return
        stream.nbytes += 9 + length
        if flags & f.END_STREAM:
            if not stream.status:
                self._stream_error(sid, stream, "DATA before the response's HEADERS")
            else:
                self._complete(sid, stream)
            return
        consumed = stream.received + length
        if consumed >= STREAM_WINDOW // 2:
            self._write(f.window_update(sid, consumed))
            consumed = 0
        stream.received = consumed

    def _headers(self, payload: bytes, flags: int, sid: int, length: int) -> None:
        if sid == 0:
            raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "HEADERS on stream 0")
        if flags & (f.PADDED | f.PRIORITY_FLAG):
            if flags & f.PADDED:
                payload = _strip_padding(payload)
            if flags & f.PRIORITY_FLAG:
                if len(payload) < 5:
                    raise ConnectionError_(
                        f.ErrorCode.FRAME_SIZE_ERROR, "HEADERS too short for its priority"
                    )
                payload = payload[5:]
        if not flags & f.END_HEADERS:
            self._block = bytearray(payload)
            self._block_stream = sid
            self._block_flags = flags
            self._block_nbytes = 9 + length
            return
        self._header_block(payload, flags, sid, 9 + length)

    def _header_block(self, block: bytes, flags: int, sid: int, nbytes: int) -> None:
        try:
            status = self._decoder.status(block)
        except HpackError as exc:
            raise ConnectionError_(f.ErrorCode.COMPRESSION_ERROR, str(exc)) from None
        self._decoded_block(status, flags, sid, nbytes)

    def _decoded_block(self, status: int, flags: int, sid: int, nbytes: int) -> None:
        """A header block decoded: a response's head (or a 1xx), or its trailers."""
        stream = self._streams.get(sid)
        if stream is None:
            self._unknown_stream(sid, "HEADERS")
            return
        stream.nbytes += nbytes
        end = flags & f.END_STREAM
        if not stream.status:
            if status >= 200:
                stream.status = status
            elif status < 100 or end:
                self._stream_error(sid, stream, "a response without a valid :status")
                return
            else:
                return  # 1xx: the response follows
        elif not end:
            self._stream_error(sid, stream, "trailers without END_STREAM")
            return
        if end:
            self._complete(sid, stream)

    def _continuation(self, payload: bytes, flags: int, sid: int) -> None:
        block = self._block
        if block is None or sid != self._block_stream:
            raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "CONTINUATION out of place")
        block += payload
        self._block_nbytes += 9 + len(payload)
        if len(block) > MAX_HEADER_BLOCK:
            raise ConnectionError_(
                f.ErrorCode.ENHANCE_YOUR_CALM,
                f"a header block above {MAX_HEADER_BLOCK} bytes on stream {sid}",
            )
        if flags & f.END_HEADERS:
            self._block = None
            self._header_block(bytes(block), self._block_flags, sid, self._block_nbytes)

    def _control(self, kind: int, flags: int, sid: int, payload: bytes) -> None:
        if kind == f.SETTINGS:
            self._settings(flags, sid, payload)
        elif kind == f.WINDOW_UPDATE:
            self._window_update(sid, payload)
        elif kind == f.RST_STREAM:
            self._rst_stream(sid, payload)
        elif kind == f.PING:
            if len(payload) != 8 or sid:
                raise ConnectionError_(f.ErrorCode.FRAME_SIZE_ERROR, "a PING not of 8 bytes")
            if not flags & f.ACK:
                self._write(f.frame(f.PING, f.ACK, 0, payload))
        elif kind == f.GOAWAY:
            self._goaway(sid, payload)
        elif kind == f.CONTINUATION:
            self._continuation(payload, flags, sid)
        elif kind == f.PUSH_PROMISE:
            raise ConnectionError_(
                f.ErrorCode.PROTOCOL_ERROR, "PUSH_PROMISE although we disabled push"
            )
        elif kind == f.PRIORITY and len(payload) != 5:
            raise ConnectionError_(f.ErrorCode.FRAME_SIZE_ERROR, "a PRIORITY not of 5 bytes")
        # other types (PRIORITY, extensions) are ignored, as RFC 9113 section 4.1 says

    def _settings(self, flags: int, sid: int, payload: bytes) -> None:
        if sid:
            raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream")
        if flags & f.ACK:
            if payload:
                raise ConnectionError_(f.ErrorCode.FRAME_SIZE_ERROR, "a SETTINGS ACK with a body")
            return
        if len(payload) % 6:
            raise ConnectionError_(
                f.ErrorCode.FRAME_SIZE_ERROR, "SETTINGS not a multiple of 6 bytes"
            )
        for key, value in f.parse_settings(payload):
            if key == f.SETTINGS_MAX_CONCURRENT_STREAMS:
                self._limit = value
            elif key == f.SETTINGS_INITIAL_WINDOW_SIZE:
                if value > f.MAX_WINDOW:
                    raise ConnectionError_(
                        f.ErrorCode.FLOW_CONTROL_ERROR, f"initial window {value} above 2**31-1"
                    )
                delta = value - self._peer_window
                self._peer_window = value
                for stream_id in self._stream_windows:
                    self._stream_windows[stream_id] += delta
            elif key == f.SETTINGS_MAX_FRAME_SIZE:
                if not f.DEFAULT_MAX_FRAME <= value <= f.MAX_FRAME_LIMIT:
                    raise ConnectionError_(
                        f.ErrorCode.PROTOCOL_ERROR, f"SETTINGS_MAX_FRAME_SIZE {value} out of range"
                    )
                self._peer_max_frame = value
            elif key == f.SETTINGS_ENABLE_PUSH and value > 1:
                raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, f"SETTINGS_ENABLE_PUSH {value}")
        self._write(f.frame(f.SETTINGS, f.ACK, 0))
        if not self._settings_seen:
            self._settings_seen = True
            if not self.ready.done():
                self.ready.set_result(None)
        self._start_waiting()
        self._send_blocked()

    def _window_update(self, sid: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise ConnectionError_(f.ErrorCode.FRAME_SIZE_ERROR, "a WINDOW_UPDATE not of 4 bytes")
        increment = f.u32(payload)
        if sid == 0:
            if increment == 0:
                raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "a WINDOW_UPDATE of 0")
            self._send_window += increment
            if self._send_window > f.MAX_WINDOW:
                raise ConnectionError_(
                    f.ErrorCode.FLOW_CONTROL_ERROR, "the connection window above 2**31-1"
                )
        elif sid in self._stream_windows:
            self._stream_windows[sid] += increment
        if self._blocked:
            self._send_blocked()

    def _rst_stream(self, sid: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise ConnectionError_(f.ErrorCode.FRAME_SIZE_ERROR, "a RST_STREAM not of 4 bytes")
        if sid == 0:
            raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "RST_STREAM on stream 0")
        stream = self._streams.pop(sid, None)
        if stream is None:
            return
        code = f.code_name(f.u32(payload))
        self._ended(sid)
        stream.done(OpError(ErrorClass.PROTOCOL, "stream reset by the server", f"h2:{code}"), 0)

    def _goaway(self, sid: int, payload: bytes) -> None:
        if sid or len(payload) < 8:
            raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "a malformed GOAWAY")
        last = f.u32(payload)
        code = f.u32(payload, 4)
        self.alive = False
        self.last_stream = last
        self.goaway_code = code
        dropped = [sid for sid in self._streams if sid > last]
        name = f.code_name(code)
        debug = payload[8:72].decode("ascii", "replace")
        error = OpError(
            ErrorClass.PROTOCOL,
            f"the server went away{': ' + debug if debug.isprintable() and debug else ''}",
            f"h2:{name}",
        )
        if code != f.ErrorCode.NO_ERROR:
            self._closing_error = error
        for stream_id in dropped:
            stream = self._streams.pop(stream_id)
            self._stream_windows.pop(stream_id, None)
            if code == f.ErrorCode.NO_ERROR and not stream.retried:
                self._unavailable(stream.request, stream.stamps, stream.done, True)
            else:
                stream.done(error, 0)
        waiting = self._waiting
        self._waiting = deque()
        for request, stamps, done, retried, _ in waiting:
            self._unavailable(request, stamps, done, retried)
        if not self._streams and self._transport is not None:
            self._transport.close()

    def _complete(self, sid: int, stream: _Stream) -> None:
        del self._streams[sid]
        status = stream.status
        if self._waiting or self._stream_windows or not self.alive:
            self._ended(sid)
        stream.stamps.received = self.stamps.received
        if status in self.accept:
            stream.done(None, stream.nbytes)
        else:
            stream.done(status_error(status), stream.nbytes)

    def _ended(self, sid: int) -> None:
        """A stream ended: start one that waits for room, or close a connection going away."""
        if sid in self._stream_windows:
            del self._stream_windows[sid]
        if self._waiting:
            self._start_waiting()
        elif not self.alive and not self._streams and self._transport is not None:
            self._transport.close()

    def _start_waiting(self) -> None:
        waiting = self._waiting
        while waiting and len(self._streams) < self._limit and self.alive:
            request, stamps, done, retried, started = waiting.popleft()
            self._start(request, stamps, done, retried, started)

    def _stream_error(self, sid: int, stream: _Stream, detail: str) -> None:
        """A malformed response on one stream: reset it (PROTOCOL_ERROR) and fail it."""
        del self._streams[sid]
        self._write(f.rst_stream(sid, f.ErrorCode.PROTOCOL_ERROR))
        self._ended(sid)
        stream.done(OpError(ErrorClass.PROTOCOL, detail, "h2:PROTOCOL_ERROR"), stream.nbytes)

    def _unknown_stream(self, sid: int, what: str) -> None:
        """A frame for a stream not in flight: one we reset or timed out, or never opened."""
        if sid >= self._next_id or not sid & 1:
            raise ConnectionError_(
                f.ErrorCode.PROTOCOL_ERROR, f"{what} on stream {sid}, which we never opened"
            )

    def _connection_error(self, error: ConnectionError_) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.write(f.goaway(self._next_id - 2 if self._next_id > 1 else 0, error.h2_code))
            transport.close()
        self.abort(error)

    def _fail_all(self, error: OpError) -> None:
        streams = self._streams
        self._streams = {}
        self._stream_windows.clear()
        self._blocked.clear()
        waiting = self._waiting
        self._waiting = deque()
        for stream in streams.values():
            stream.done(error, 0)
        for _, _, done, _, _ in waiting:
            done(error, 0)

    # -- timeouts ---------------------------------------------------------------

    def _on_timer(self) -> None:
        self._timer = None
        now = self._loop.time()
        limit = now - self.timeout + 0.001
        expired: list[int] = []
        for sid, stream in self._streams.items():
            if stream.started > limit:
                break
            expired.append(sid)
        while self._waiting and self._waiting[0][4] <= limit:
            done = self._waiting.popleft()[2]
            done(OpError(ErrorClass.TIMEOUT, f"no free stream within {self.timeout:g}s"), 0)
        oldest = self._streams[expired[0]] if expired else None
        # silence since the oldest stream began ends the connection, unless that stream's body
        # waits for the server's window: then the window's stall is what went wrong
        if oldest is not None and oldest.body_sent < 0 and self._heard < oldest.started:
            self.abort(
                OpError(
                    ErrorClass.TIMEOUT,
                    f"no response within {self.timeout:g}s (nothing came from the server)",
                )
            )
            return
        for sid in expired:
            stream = self._streams.pop(sid)
            self._write(f.rst_stream(sid, f.ErrorCode.CANCEL))
            error = self._timeout_error(sid, stream)
            self._ended(sid)
            stream.done(error, 0)
        if self._timer is not None:  # armed by a stream started from a completion above
            self._timer.cancel()
            self._timer = None
        first = next(iter(self._streams.values()), None)
        if first is not None:
            self._timer = self._loop.call_at(first.started + self.timeout, self._on_timer)
        elif self._waiting:
            self._timer = self._loop.call_at(self._waiting[0][4] + self.timeout, self._on_timer)

    def _timeout_error(self, sid: int, stream: _Stream) -> OpError:
        if stream.body_sent >= 0:
            window = self._stream_windows.get(sid, 0)
            which = "stream's" if window <= 0 else "connection's"
            return OpError(
                ErrorClass.TIMEOUT,
                f"request body stalled: {stream.body_sent} of {stream.request.body} bytes sent, "
                f"the server's {which} flow-control window stayed shut for {self.timeout:g}s "
                "(no WINDOW_UPDATE)",
                "h2:stalled-window",
            )
        return OpError(ErrorClass.TIMEOUT, f"no response within {self.timeout:g}s")


def _strip_padding(payload: bytes) -> bytes:
    if not payload or payload[0] >= len(payload):
        raise ConnectionError_(f.ErrorCode.PROTOCOL_ERROR, "padding longer than the frame")
    return payload[1 : len(payload) - payload[0]]
