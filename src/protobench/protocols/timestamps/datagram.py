"""A connected datagram socket read through a reactor, with the kernel's timestamps (UDP).

The datagram counterpart of :class:`~.transport.StampedTransport`, for a client
that owns its UDP sockets and handles each datagram itself (BACnet/IP's lanes):
:class:`StampedDatagram` registers one connected socket with a
:class:`~.reactor.Reactor` and

* reads each datagram with ``recvmsg``, puts the kernel's receive stamp of it in
  the session's :class:`~.clock.Stamps` (``received``) and hands the datagram to
  the client's ``received`` callback: a reply completed inside that call has its
  time there. Eagerly read (:attr:`Reactor.lazy` false) it reads one datagram per
  readiness, as the loop's ``add_reader`` would (the reactor reports the socket
  again while more wait); polled lazily it reads every datagram waiting;
* stamps a request's send (:meth:`StampedDatagram.send_request`): the user-space
  time immediately before the send syscall, replaced by the kernel's transmit
  stamp of the datagram where the socket gives send stamps. On a datagram socket
  ``OPT_ID`` numbers the datagrams sent since the option was set (0, 1, ...), so
  the request's stamp is the one keyed with its number; it is read from the
  error queue right after the send (on loopback it is there when ``send``
  returns), or when the socket reports it. :meth:`StampedDatagram.send` sends
  without touching the times (acknowledgements, retransmissions).

A failed send raises, as ``socket.send`` does; a failed read (a connected UDP
socket's ICMP port unreachable is ``ConnectionRefusedError``) goes to the
client's ``failed`` callback and the socket stays open: the client decides.
What the sockets share with TCP's transport is :mod:`.clock`'s (the option, the
stamps' parsing and conversion) and the reactor.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from socket import MSG_ERRQUEUE

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
from protobench.protocols.timestamps.reactor import EPOLLERR, EPOLLIN, Reactor

_HALF = 1 << 31
"""Keys compare modulo 2**32: one less than half the range ahead is ahead."""


class StampedDatagram:
    """One connected datagram socket of a client, read through a reactor with kernel stamps."""

    __slots__ = (
        "_awaited",
        "_closed",
        "_failed",
        "_fd",
        "_next_key",
        "_reactor",
        "_received",
        "_recvmsg",
        "_send",
        "_send_stamps",
        "_size",
        "_sock",
        "stamps",
    )

    def __init__(
        self,
        sock: socket.socket,
        reactor: Reactor,
        stamps: Stamps,
        received: Callable[[bytes], None],
        failed: Callable[[OSError], None],
        size: int,
    ) -> None:
        """Turn the kernel's stamps on for ``sock`` (connected, non-blocking) and read it
        through ``reactor``: each datagram (of at most ``size`` bytes) goes to ``received``,
        a read error to ``failed``. Send stamps are asked for when the reactor wants them."""
        receive, send_stamps = enable(sock, send=reactor.send)
        self._sock = sock
        self._fd = sock.fileno()
        self._reactor = reactor
        self.stamps = stamps
        stamps.kernel_receive = receive
        stamps.kernel_send = send_stamps
        self._send_stamps = send_stamps
        self._recvmsg = sock.recvmsg
        self._send = sock.send
        self._received = received
        self._failed = failed
        self._size = size
        self._next_key = 0
        """The ``OPT_ID`` key of the next datagram sent (modulo 2**32)."""
        self._awaited = -1
        """The key of the request whose send stamp is still to be read (-1: none)."""
        self._closed = False
        reactor.register(self._fd, self._on_events, EPOLLIN)

    def send(self, data: bytes | bytearray) -> int:
        """Send one datagram; raise ``OSError`` as ``socket.send`` does."""
        sent = self._send(data)
        self._next_key = (self._next_key + 1) & ID_MASK
        return sent

    def send_request(self, data: bytes | bytearray) -> int:
        """Send a request's datagram and stamp its send (:class:`~.clock.Stamps` ``sent``):
        the time just before the syscall, replaced by the kernel's stamp where given."""
        key = self._next_key
        self.stamps.sent = perf_ns()
        sent = self._send(data)
        self._next_key = (key + 1) & ID_MASK
        if self._send_stamps:
            self._awaited = key
            self._read_stamps(until_awaited=True)
        return sent

    def _read_stamps(self, until_awaited: bool) -> None:
        """Read send stamps from the error queue until the awaited request's (with
        ``until_awaited``) or until none is left; the request's becomes its ``sent``."""
        recvmsg = self._recvmsg
        while True:
            try:
                _, ancillary, _, _ = recvmsg(0, ERRQUEUE_ANCILLARY, MSG_ERRQUEUE)
            except OSError:  # empty (BlockingIOError), or nothing more to learn here
                return
            found = transmit_stamp(ancillary)
            if found is None:
                continue
            stamp, key = found
            if (key - self._next_key) & ID_MASK < _HALF:
                self._next_key = (key + 1) & ID_MASK  # sends this side did not count
            if key == self._awaited:
                self.stamps.sent = stamp
                self._awaited = -1
                if until_awaited:
                    return

    def _on_events(self, events: int) -> None:
        if events & EPOLLERR:
            self._read_stamps(until_awaited=False)  # then a pending socket error, if any
        stamps = self.stamps
        recvmsg = self._recvmsg
        every = self._reactor.lazy
        while not self._closed:
            try:
                data, ancillary, _, _ = recvmsg(self._size, ANCILLARY)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._failed(exc)
                return
            stamps.received = received_ns(ancillary)
            self._received(data)
            if not every:
                return

    def close(self) -> None:
        """Stop reading and close the socket (idempotent)."""
        if not self._closed:
            self._closed = True
            self._reactor.unregister(self._fd)
            self._sock.close()
