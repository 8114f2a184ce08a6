"""An asyncio transport over a TCP socket that reads the kernel's timestamps with the bytes.

:class:`StampedTransport` gives an ``asyncio.Protocol`` what the loop's own
transports give it (``data_received``, ``eof_received``, ``connection_lost``;
``write``, ``close``, ``abort``, ``get_extra_info``, flow control), so a
protocol client written for asyncio adopts the kernel's clock by being
connected with :func:`open_stamped` instead of ``loop.create_connection``
and by sending each request with :meth:`StampedTransport.write_request`:

* every read is one ``recvmsg`` of the socket (from a :class:`~.reactor.Reactor`'s
  poll), and before the bytes go to ``data_received`` the transport puts the
  kernel's receive stamp of the last packet among them in the session's
  :class:`~.clock.Stamps` (``received``): a codec that completes a reply inside
  ``data_received`` has its time there, with nothing to do itself;
* :meth:`~StampedTransport.write_request` takes the user-space time immediately
  before the send syscall (``Stamps.sent``) and, where the socket gives send
  stamps, replaces it with the kernel's stamp of the request's first packet,
  read from the socket's error queue right after the send (on loopback and
  most links the stamp is there when ``send`` returns; otherwise it is read
  when the socket reports it). Plain :meth:`~StampedTransport.write` sends
  without touching the times (acknowledgements, pings, the rest of a
  multi-message exchange). With :meth:`~StampedTransport.defer_request` a
  request written from a reply's handler (inside the reactor's poll) is held
  until the poll ends and then sent with the others its batch of replies
  started (:meth:`~.reactor.Reactor.defer`), as the loop's own transports
  gather a callback batch's writes; what is written after it follows it.

Reads and writes happen on the loop. A write the socket cannot take at once is
kept and sent when the socket is writable again (with ``pause_writing`` /
``resume_writing`` past the high-water mark, as asyncio's transports do).
``close`` sends what is kept first; ``abort`` and a socket error close at once.
``connection_lost`` is always called soon after, never from inside the call
that closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import Callable
from socket import MSG_ERRQUEUE
from typing import Any

from protobench.protocols.timestamps.clock import (
    ANCILLARY,
    ERRQUEUE_ANCILLARY,
    ID_MASK,
    Stamps,
    enable,
    perf_ns,
    received_ns,
    transmit_stamp,
)
from protobench.protocols.timestamps.reactor import EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT, Reactor

READ_SIZE = 65536
"""Bytes asked per ``recvmsg``; a read that fills it is followed by another at once."""
HIGH_WATER = 64 * 1024
LOW_WATER = 16 * 1024


class StampedTransport(asyncio.Transport):
    """One connected TCP socket read through a :class:`~.reactor.Reactor`, with kernel stamps."""

    def __init__(
        self,
        sock: socket.socket,
        protocol: asyncio.Protocol,
        reactor: Reactor,
        stamps: Stamps,
        *,
        send_stamps: bool,
    ) -> None:
        super().__init__()
        self._sock = sock
        self._fd = sock.fileno()
        self._protocol = protocol
        self._reactor = reactor
        self._loop = asyncio.get_running_loop()
        self.stamps = stamps
        self._recvmsg = sock.recvmsg
        self._send = sock.send
        self._buffer = bytearray()
        self._accepted = 0
        """Bytes the kernel took so far (the send stamps' keys count from 0 with them)."""
        self._request_first = -1
        """Key of the first byte of the request awaiting its send stamp (-1: none)."""
        self._request_size = 0
        self._send_stamps = send_stamps
        self._held: bytes | None = None
        """A request held back until the end of the reactor's poll (:meth:`Reactor.defer`)."""
        self._held_rest = b""
        """Bytes written after the held request, sent right after it."""
        self._send_held_now = self._send_held
        self._closing = False
        self._closed = False
        self._reading = True
        self._writing_paused = False
        self._eof = False
        self._events = EPOLLIN
        stamps.kernel_receive = True
        stamps.kernel_send = send_stamps
        reactor.register(self._fd, self._on_events, EPOLLIN)

    # -- asyncio.BaseTransport ----------------------------------------------

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "socket":
            return self._sock
        if name in ("peername", "sockname"):
            try:
                return self._sock.getpeername() if name == "peername" else self._sock.getsockname()
            except OSError:
                return default
        return default

    def is_closing(self) -> bool:
        return self._closing or self._closed

    def close(self) -> None:
        """Close once what is kept has been sent; ``connection_lost(None)`` follows soon."""
        if self._closing or self._closed:
            return
        if self._held is not None:
            self._send_held()
        self._closing = True
        if not self._buffer:
            self._shut(None)

    def abort(self) -> None:
        """Close at once, dropping what is kept."""
        self._held = None
        self._held_rest = b""
        self._buffer.clear()
        self._shut(None)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        assert isinstance(protocol, asyncio.Protocol)
        self._protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    # -- reading --------------------------------------------------------------

    def is_reading(self) -> bool:
        return self._reading and not self._closed

    def pause_reading(self) -> None:
        if self._reading and not self._closed:
            self._reading = False
            self._set_events(self._events & ~EPOLLIN)

    def resume_reading(self) -> None:
        if not self._reading and not self._closed:
            self._reading = True
            self._set_events(self._events | EPOLLIN)

    def _on_events(self, events: int) -> None:
        if events == EPOLLIN and not self._eof:
            self._read()  # the common case: bytes to read, nothing else
            return
        if events & EPOLLERR:
            self._error_event()
        if events & EPOLLOUT and not self._closed:
            self._flush()
        if self._closed:
            return
        if self._eof:
            if events & EPOLLHUP:
                self._shut(None)  # both ways shut: nothing more can come or go
            return
        if events & (EPOLLIN | EPOLLHUP):
            self._read()

    def _read(self) -> None:
        stamps = self.stamps
        recvmsg = self._recvmsg
        while True:
            try:
                data, ancillary, _, _ = recvmsg(READ_SIZE, ANCILLARY)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._shut(exc)
                return
            if not data:
                self._end_of_stream()
                return
            stamps.received = received_ns(ancillary)
            self._protocol.data_received(data)
            if len(data) < READ_SIZE or not self._reading or self._closed:
                return

    def _end_of_stream(self) -> None:
        self._eof = True
        self._set_events(self._events & ~EPOLLIN)
        keep_open = self._protocol.eof_received()
        if not keep_open:
            self.close()

    # -- writing --------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Send ``data`` (kept and sent later what the socket cannot take now)."""
        if self._closing or self._closed or not data:
            return
        if self._held is not None:
            self._held_rest += data
            return
        if self._buffer:
            self._buffer += data
            self._check_high_water()
            return
        try:
            sent = self._send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._shut(exc)
            return
        self._accepted += sent
        if sent < len(data):
            self._buffer += memoryview(data)[sent:]
            self._set_events(self._events | EPOLLOUT)
            self._check_high_water()

    def write_request(self, data: bytes) -> None:
        """Send a request now and stamp its send (:class:`~.clock.Stamps` ``sent``).

        The user-space time immediately before the send, replaced by the kernel's
        stamp of the request's first packet where the socket gives send stamps.
        """
        if self._held is not None:
            self._send_held()
        self._send_request(data)

    def defer_request(self, data: bytes) -> None:
        """:meth:`write_request`, but from a reply's handler (inside the reactor's poll) the
        request is sent at the end of the poll, with the others its batch of replies starts
        (:meth:`Reactor.defer`): for a caller that reads ``sent`` only when the exchange
        completes."""
        if self._held is None:
            if self._reactor.defer(self._send_held_now):
                self._held = data
                return
        else:
            self._send_held()
        self._send_request(data)

    def _send_held(self) -> None:
        data = self._held
        if data is not None:
            rest = self._held_rest
            self._held = None
            self._held_rest = b""
            self._send_request(data)
            if rest:
                self.write(rest)

    def _send_request(self, data: bytes) -> None:
        first = self._accepted + len(self._buffer)
        stamps = self.stamps
        stamps.sent = perf_ns()
        self.write(data)
        if self._send_stamps and not self._closed:
            self._request_first = first = first & ID_MASK
            self._request_size = size = len(data)
            try:  # on loopback and most links the stamp is queued before send() returns
                _, ancillary, _, _ = self._recvmsg(0, ERRQUEUE_ANCILLARY, MSG_ERRQUEUE)
            except (BlockingIOError, InterruptedError):
                return  # later: the socket reports it (EPOLLERR)
            except OSError as exc:
                self._shut(exc)
                return
            found = transmit_stamp(ancillary)
            if found is not None and (found[1] - first) & ID_MASK < size:
                stamps.sent = found[0]
                self._request_first = -1
            else:  # an older stamp came first: read on to the request's
                self._error_queue()

    def _error_queue(self) -> int:
        """Read send stamps from the error queue until the request's, or none is left.

        Returns how many were read; a read error closes the transport.
        """
        count = 0
        while True:
            try:
                _, ancillary, _, _ = self._recvmsg(0, ERRQUEUE_ANCILLARY, MSG_ERRQUEUE)
            except (BlockingIOError, InterruptedError):
                return count
            except OSError as exc:
                self._shut(exc)
                return count
            count += 1
            if self._take_stamp(ancillary):
                return count

    def _take_stamp(self, ancillary: list[tuple[int, int, bytes]]) -> bool:
        """Whether an error-queue message is the send stamp of the request in flight (then
        it is the request's ``sent``)."""
        found = transmit_stamp(ancillary)
        first = self._request_first
        if found is None or first < 0 or (found[1] - first) & ID_MASK >= self._request_size:
            return False
        self.stamps.sent = found[0]
        self._request_first = -1
        return True

    def _error_event(self) -> None:
        """The socket reported an error: send stamps to read, or the connection failed."""
        if self._error_queue() or self._closed:
            return
        error = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if error:
            self._shut(OSError(error, errno.errorcode.get(error, str(error))))

    def _flush(self) -> None:
        buffer = self._buffer
        try:
            sent = self._send(buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._shut(exc)
            return
        self._accepted += sent
        del buffer[:sent]
        if self._writing_paused and len(buffer) <= LOW_WATER:
            self._writing_paused = False
            self._protocol.resume_writing()
        if not buffer:
            self._set_events(self._events & ~EPOLLOUT)
            if self._closing:
                self._shut(None)

    def _check_high_water(self) -> None:
        if not self._writing_paused and len(self._buffer) > HIGH_WATER:
            self._writing_paused = True
            self._protocol.pause_writing()

    def get_write_buffer_size(self) -> int:
        return len(self._buffer)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return LOW_WATER, HIGH_WATER

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        if not self._buffer and not self._closed:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_WR)

    # -- closing ----------------------------------------------------------------

    def _set_events(self, events: int) -> None:
        if events != self._events and not self._closed:
            self._events = events
            self._reactor.modify(self._fd, events)

    def _shut(self, exc: Exception | None) -> None:
        """Close the socket now; ``connection_lost(exc)`` runs soon after."""
        if self._closed:
            return
        self._closed = self._closing = True
        self._held = None
        self._held_rest = b""
        self._buffer.clear()
        self._reactor.unregister(self._fd)
        self._sock.close()
        self._loop.call_soon(self._protocol.connection_lost, exc)


async def open_stamped(
    protocol_factory: Callable[[], asyncio.Protocol],
    host: str,
    port: int,
    *,
    reactor: Reactor,
    stamps: Stamps,
    source: str | None = None,
) -> tuple[StampedTransport, asyncio.Protocol]:
    """Connect to ``host:port`` (from ``source`` when given) with the kernel's stamps on.

    Tries each address of ``host`` in turn as ``loop.create_connection``
    does and raises the last ``OSError``. Send stamps are asked for when the
    reactor wants them (:attr:`Reactor.send`); ``stamps.kernel_send`` says
    whether the kernel took the option.
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    last: OSError | None = None
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            if source is not None:
                sock.bind((source, 0))
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        except BaseException:
            sock.close()
            raise
        _, send = enable(sock, send=reactor.send)
        protocol = protocol_factory()
        transport = StampedTransport(sock, protocol, reactor, stamps, send_stamps=send)
        protocol.connection_made(transport)
        return transport, protocol
    raise last if last is not None else OSError(f"no address for {host!r}")
