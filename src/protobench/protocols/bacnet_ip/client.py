"""The lean BACnet/IP client: pre-encoded requests over UDP, replies matched by invoke ID.

A :class:`DatagramClient` owns one or more :class:`Lane` sockets: non-blocking
UDP sockets bound to the configured local address (127.0.0.1 by default) on
an ephemeral port and connected to the target, so the kernel drops datagrams
from anyone else and reports an ICMP port-unreachable (``refused``). Each is
watched with the event loop's ``add_reader`` and read with ``recv``, and
written with ``send``: no transport object, no address tuple per datagram.
A lane has 256 invoke IDs. Sending a request is setting the invoke ID byte of
its pre-encoded datagram and one ``send``; its reply is matched by invoke ID and checked by the
:class:`Request` that was sent. There is no task, future or timer per
request: one timer sweeps the deadlines a few times per attempt timeout,
resends when retries are configured, and fails a request with ``timeout`` at
the end.

**Invoke-ID reuse.** A BACnet server remembers each (client address, invoke
ID) it answered for a while and answers a request carrying the same pair
with the remembered reply, without looking at the request (a retransmission,
for all it knows; bac-py's server does so for 6 s). A client sending
thousands of requests per second from one socket wraps its 256 IDs within
that window and receives stale replies. So an (address, ID) pair is reused
only ``reuse_after`` seconds after its last use: when the next ID of every
lane is still too recent, the client opens another lane (a new address). In
the steady state a session has ``rate × reuse_after / 256`` lanes. At the
lane limit (or when no socket can be opened) a request waits until an ID
cools down; the wait is part of its latency.

The client can register its first lane as a foreign device with a BBMD at
the target's address; it renews the registration at half its time-to-live.
The broadcasts the BBMD then forwards to it (Forwarded-NPDUs: other clients'
Who-Is, devices' I-Am) answer nothing and count as ``forwarded``; any other
datagram that answers no request in flight (late, repeated) counts as
``stray``.

**BACnet/IPv6** (Annex U, :mod:`.link`): the lanes are IPv6 sockets, each
with a VMAC of its own, written into every datagram it sends; before its
first request the client learns the first hop's VMAC
(:meth:`DatagramClient.resolve`), and a reply counts only when it names both
VMACs.

**Segmented replies.** Requests that expect a ComplexACK accept segmented
replies; a lane reassembles them (:mod:`.segments`), sends the SegmentACKs,
and checks the whole reply as if it had come in one datagram. Every segment
received moves the request's deadline on.

**Times.** A request's first datagram is sent with its send stamped in the
session's :class:`~protobench.protocols.timestamps.clock.Stamps` (not a
resend's). With a :class:`~protobench.protocols.timestamps.reactor.Reactor`
(the kernel's clock) each lane's socket is read through it with ``recvmsg``
(:class:`~protobench.protocols.timestamps.datagram.StampedDatagram`): a reply's
time is the kernel's receive stamp of its datagram (of the last segment's, for a
segmented reply), a request's the kernel's send stamp of its datagram. Without
one, lanes are read with the loop's ``add_reader`` and ``recv`` and the send is
timed just before the syscall (the user clock).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable

from protobench.protocols.bacnet_ip.codec import INVOKE_IDS, Request
from protobench.protocols.bacnet_ip.link import (
    BVLC_IPV4,
    BVLC_IPV6,
    IPV4_NPDU_AT,
    IPV4_UNICAST,
    IPV6_NPDU_AT,
    IPV6_UNICAST,
    SOURCE_VMAC,
    VMACS,
    Path,
    Route,
    bvlc_result,
    encode_register_foreign_device,
    encode_to_device,
    encode_virtual_address_resolution,
    is_forwarded,
    resolved_vmac,
    socket_vmac,
)
from protobench.protocols.bacnet_ip.segments import Reassembly, segment_ack_apdu
from protobench.protocols.base import Done
from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.protocols.timestamps.datagram import StampedDatagram
from protobench.protocols.timestamps.reactor import Reactor
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally

_NETWORK_MESSAGE = 0x80
_HAS_DNET = 0x20
_HAS_SNET = 0x08
_SEGMENT_ACK = 0x4
_SIMPLE_ACK = 0x2
_SEGMENTED_ACK_MASK = 0xF8
_SEGMENTED_ACK = 0x38
_MORE_FOLLOWS = 0x04
_SWEEPS_PER_ATTEMPT = 8
_MIN_TICK = 0.005
MAX_DATAGRAM = 1500
MAX_LANES = 1024
NEVER = -1e18

monotonic = time.monotonic
Pending = tuple[Done, Request, int]
"""A request in flight: its callback, the request, and how many times it was resent."""


class Lane:
    """One socket of a client, with its 256 invoke IDs.

    ``used[i]`` is when invoke ID ``i`` was last sent (its deadline is that
    plus the attempt timeout); ``pending[i]`` is its request while in flight.
    """

    def __init__(self, client: DatagramClient, sock: socket.socket) -> None:
        self.client = client
        self.sock = sock
        self.recv = sock.recv
        self.vmac: bytes | None = None
        """This socket's VMAC on BACnet/IPv6 (``None`` on BACnet/IP)."""
        self.vmacs = b""
        """The first hop's VMAC and this socket's, as a reply names them (IPv6)."""
        self.stamped: StampedDatagram | None = None
        """The socket read through the client's reactor (the kernel's clock), or ``None``."""
        send: Callable[[bytes | bytearray], int] = sock.send
        if client.reactor is None:
            client.loop.add_reader(sock.fileno(), self.readable)
        else:
            self.stamped = StampedDatagram(
                sock, client.reactor, client.stamps, self.received, self.read_failed, MAX_DATAGRAM
            )
            send = self.stamped.send
        self.send: Callable[[bytearray], int] = send
        """Send a datagram other than a request's first (a SegmentACK, a resend; on IPv6,
        writing this socket's VMAC as its source first)."""
        if client.ipv6:
            self.bvlc, self.unicast, self.npdu_at = BVLC_IPV6, IPV6_UNICAST, IPV6_NPDU_AT
            self.vmac = vmac = socket_vmac(sock.getsockname()[1])
            self.vmacs = (client.path.vmac or b"") + vmac

            def send_with_vmac(wire: bytearray) -> int:
                wire[SOURCE_VMAC] = vmac
                return send(wire)

            self.send = send_with_vmac
        else:
            self.bvlc, self.unicast, self.npdu_at = BVLC_IPV4, IPV4_UNICAST, IPV4_NPDU_AT
        self.open = True
        self.direct = client.path.route is None
        self.pending: list[Pending | None] = [None] * INVOKE_IDS
        self.used = [NEVER] * INVOKE_IDS
        self.next = 0
        self.inflight = 0
        self.segments: dict[int, Reassembly] = {}
        """Segmented replies being received, by invoke ID."""

    def readable(self) -> None:
        """The socket has a datagram (the event loop calls this; it calls again if more wait)."""
        try:
            data = self.recv(MAX_DATAGRAM)
        except BlockingIOError:
            return
        except OSError as exc:
            self.read_failed(exc)
            return
        self.received(data)

    def read_failed(self, exc: OSError) -> None:
        """A read of the socket failed: every request in flight on it fails."""
        if isinstance(exc, ConnectionRefusedError):
            self.fail_all(OpError(ErrorClass.REFUSED, "ICMP port unreachable"))
        else:
            self.fail_all(OpError(ErrorClass.CLOSED, f"socket error: {exc}"))

    def received(self, data: bytes) -> None:
        """A datagram from the target: the reply of a request in flight, a segment, or stray."""
        size = len(data)
        at = self.npdu_at
        if (
            size < at + 5
            or data[1] != self.unicast
            or data[0] != self.bvlc
            or (data[2] << 8 | data[3]) != size
            or (at == IPV6_NPDU_AT and data[VMACS] != self.vmacs)
        ):
            self.client.other(data, self)
            return
        if data[at + 1] == 0 and self.direct:
            start = at + 2
        else:
            start = self.client.apdu_start(data, at)
            if start < 0 or start + 3 > size:
                self.client.note_stray()
                return
        kind = data[start] >> 4
        invoke_id = data[start + 1]
        entry = self.pending[invoke_id]
        if entry is None or kind < _SIMPLE_ACK or kind == _SEGMENT_ACK:
            self.client.note_stray()
            return
        if data[start] & _SEGMENTED_ACK_MASK == _SEGMENTED_ACK:
            whole = self.segment(invoke_id, entry, data, start)
            if whole is None:
                return
            data, size = whole
        self.pending[invoke_id] = None
        self.inflight -= 1
        error = entry[1].accept(data, start)
        if error is None:
            entry[0](None, size)
        else:
            entry[0](error, 0)

    def segment(
        self, invoke_id: int, entry: Pending, data: bytes, start: int
    ) -> tuple[bytes, int] | None:
        """Take one segment of a ComplexACK; the whole reply (and its size) once complete.

        The whole reply is the datagram's header followed by an unsegmented
        ComplexACK carrying every segment's data.
        """
        if len(data) < start + 5:
            self.client.note_stray()
            return None
        sequence = data[start + 2]
        reassembly = self.segments.get(invoke_id)
        if sequence == 0:
            reassembly = self.segments[invoke_id] = Reassembly(data[start + 4], data[start + 3])
        elif reassembly is None:
            self.client.note_stray()
            return None
        self.used[invoke_id] = monotonic()
        try:
            ack = reassembly.add(sequence, bool(data[start] & _MORE_FOLLOWS), data[start + 5 :])
        except ValueError as exc:
            del self.segments[invoke_id]
            self.pending[invoke_id] = None
            self.inflight -= 1
            entry[0](OpError(ErrorClass.VALIDATION, f"{entry[1].label}: {exc}"), 0)
            return None
        if ack is not None:
            apdu = segment_ack_apdu(invoke_id, ack, reassembly.window)
            try:
                self.send(bytearray(encode_to_device(apdu, self.client.path)))
            except OSError as exc:
                del self.segments[invoke_id]
                self.send_failed(invoke_id, exc)
                return None
        if not reassembly.complete:
            return None
        del self.segments[invoke_id]
        body = reassembly.payload()
        head = bytes((data[start] & 0xF0, invoke_id, reassembly.service))
        return data[:start] + head + body, start + len(head) + len(body)

    def send_failed(self, invoke_id: int, exc: OSError) -> None:
        """The request pending at ``invoke_id`` could not be sent: fail it (soon)."""
        entry = self.pending[invoke_id]
        if entry is None:
            return
        self.pending[invoke_id] = None
        self.inflight -= 1
        if isinstance(exc, ConnectionRefusedError):
            error = OpError(ErrorClass.REFUSED, "ICMP port unreachable")
        elif isinstance(exc, BlockingIOError):
            error = OpError(ErrorClass.LOCAL, "socket send buffer full")
        else:
            error = OpError(ErrorClass.CLOSED, f"socket error: {exc}")
        self.client.loop.call_soon(entry[0], error, 0)

    def fail_all(self, error: OpError) -> None:
        self.client.fail_waiting(error)
        self.segments.clear()
        for invoke_id, entry in enumerate(self.pending):
            if entry is not None:
                self.pending[invoke_id] = None
                self.inflight -= 1
                entry[0](error, 0)

    def close(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.open:
            self.open = False
            if self.stamped is None:
                loop.remove_reader(self.sock.fileno())
                self.sock.close()
            else:
                self.stamped.close()
            self.fail_all(OpError(ErrorClass.CLOSED, "session closed before the reply"))


class DatagramClient:
    """Requests to one BACnet/IP or BACnet/IPv6 device (directly or through one router)."""

    def __init__(
        self,
        host: str,
        port: int,
        local_host: str,
        route: Route | None,
        request_timeout: float,
        retries: int = 0,
        reuse_after: float = 0.0,
        count: Callable[[str, int], None] | None = None,
        stamps: Stamps | None = None,
        reactor: Reactor | None = None,
    ) -> None:
        """A client with one lane bound to ``local_host``, connected to ``host:port``.

        An IPv6 ``host`` makes it a BACnet/IPv6 client (``local_host`` then an
        IPv6 address too), which must :meth:`resolve` before its first request.
        ``stamps`` are the session's (its own when not given); with a ``reactor`` the lanes
        read the kernel's timestamps. Must be created in a running event loop; raises
        ``OSError`` when the first socket cannot be opened.
        """
        self.loop = asyncio.get_running_loop()
        self.ipv6 = ":" in host
        self.remote = (host, port)
        self.local_host = local_host
        self.path = Path(route)
        """How requests reach the device (on IPv6, with the first hop's VMAC once resolved)."""
        self.expected_source = None if route is None else (route.dnet, route.dadr)
        self.retries = retries
        self.attempt_timeout = request_timeout / (retries + 1)
        self.tick = max(_MIN_TICK, self.attempt_timeout / _SWEEPS_PER_ATTEMPT)
        self.reuse_after = reuse_after
        self.lanes: list[Lane] = []
        self.resent = 0
        self.stray = 0
        self.forwarded = 0
        self.sent = Tally()
        """The bytes of the datagrams sent (a session sets its op's tally once open)."""
        self.stamps = stamps if stamps is not None else Stamps()
        """The times of the request in flight: its first datagram's send is stamped, not a
        resend's."""
        self.reactor = reactor
        self.count = count or _uncounted
        self.closed = False
        self._parked: deque[tuple[Request, Done]] = deque()
        self._max_lanes = MAX_LANES
        self._timer: asyncio.TimerHandle | None = None
        self._wake: asyncio.TimerHandle | None = None
        self._registration: asyncio.Future[int] | None = None
        self._resolution: asyncio.Future[bytes] | None = None
        self._renewal: asyncio.TimerHandle | None = None
        self._ttl = 0
        self._lane = self._add_lane()

    def note_stray(self) -> None:
        """A datagram that answers no request in flight (late, duplicate, foreign)."""
        self.stray += 1
        self.count("stray", 1)

    def _add_lane(self) -> Lane:
        sock = socket.socket(socket.AF_INET6 if self.ipv6 else socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            sock.bind((self.local_host, 0))
            sock.connect(self.remote)
        except OSError:
            sock.close()
            raise
        lane = Lane(self, sock)
        self.lanes.append(lane)
        return lane

    def send(self, request: Request, done: Done) -> None:
        """Send ``request``; ``done(error or None, bytes)`` is called once with the outcome."""
        now = monotonic()
        lane = self._lane
        invoke_id = lane.next
        if (
            self._parked
            or lane.pending[invoke_id] is not None
            or now - lane.used[invoke_id] < self.reuse_after
            or not lane.open
        ):
            self._send_elsewhere(request, done, now)
            return
        lane.next = (invoke_id + 1) & 0xFF
        lane.used[invoke_id] = now
        wire = request.wire
        wire[request.at] = invoke_id
        lane.pending[invoke_id] = (done, request, 0)
        lane.inflight += 1
        if self._timer is None:
            self._timer = self.loop.call_later(self.tick, self._sweep)
        stamped = lane.stamped
        try:
            if stamped is None:  # the user clock, inline: the hot path's cheapest
                self.stamps.sent = perf_ns()
                lane.send(wire)
            else:
                if lane.vmac is not None:
                    wire[SOURCE_VMAC] = lane.vmac
                stamped.send_request(wire)
        except OSError as exc:
            lane.send_failed(invoke_id, exc)
            return
        self.sent.n += len(wire)

    def _send_elsewhere(self, request: Request, done: Done, now: float) -> None:
        """The current lane cannot send now: move to another or a new one, or park the request."""
        if self.closed:
            self.loop.call_soon(done, OpError(ErrorClass.CLOSED, "session closed"), 0)
        elif not self._parked and self._usable_lane(now) is not None:
            self.send(request, done)
        else:
            self._parked.append((request, done))
            self._wake_when_cool(now)

    def _usable(self, lane: Lane, now: float) -> bool:
        invoke_id = lane.next
        return (
            lane.open
            and lane.pending[invoke_id] is None
            and now - lane.used[invoke_id] >= self.reuse_after
        )

    def _usable_lane(self, now: float) -> Lane | None:
        """Make the current lane one whose next invoke ID is usable now, opening one if need be.

        Returns it, or ``None`` at the lane limit.
        """
        current = self._lane
        if self._usable(current, now):
            return current
        count = len(self.lanes)
        first = self.lanes.index(current)
        for step in range(1, count + 1):
            lane = self.lanes[(first + step) % count]
            if self._usable(lane, now):
                self._lane = lane
                return lane
        if count < self._max_lanes:
            try:
                self._lane = self._add_lane()
            except OSError:
                self._max_lanes = count
            else:
                return self._lane
        return None

    def _wake_when_cool(self, now: float) -> None:
        """Send the parked requests when the soonest invoke ID cools down."""
        if self._wake is None:
            soonest = min(lane.used[lane.next] for lane in self.lanes if lane.open)
            delay = max(_MIN_TICK, soonest + self.reuse_after - now)
            self._wake = self.loop.call_later(delay, self._unpark)

    def _unpark(self) -> None:
        """Send the parked requests in order, until one has to wait again."""
        self._wake = None
        waiting, self._parked = self._parked, deque()
        while waiting:
            request, done = waiting.popleft()
            self.send(request, done)
            if self._parked:
                self._parked.extend(waiting)
                return

    def apdu_start(self, data: bytes, at: int) -> int:
        """Where the APDU starts in a datagram whose NPDU (at ``at``) carries addresses;
        -1 if not ours."""
        control = data[at + 1]
        if data[at] != 1 or control & _NETWORK_MESSAGE:
            return -1
        offset = at + 2
        if control & _HAS_DNET:
            offset += 3 + data[offset + 2]
        source: tuple[int, bytes] | None = None
        if control & _HAS_SNET:
            length = data[offset + 2]
            source = (
                (data[offset] << 8) | data[offset + 1],
                data[offset + 3 : offset + 3 + length],
            )
            offset += 3 + length
        if control & _HAS_DNET:
            offset += 1
        return offset if source == self.expected_source else -1

    def _sweep(self) -> None:
        self._timer = None
        now = monotonic()
        expired = now - self.attempt_timeout
        busy = False
        for lane in self.lanes:
            if not lane.inflight:
                continue
            pending, used = lane.pending, lane.used
            for invoke_id in range(INVOKE_IDS):
                entry = pending[invoke_id]
                if entry is None or used[invoke_id] > expired:
                    continue
                done, request, attempts = entry
                if attempts < self.retries and lane.open:
                    pending[invoke_id] = (done, request, attempts + 1)
                    used[invoke_id] = now
                    self.resent += 1
                    self.count("resent", 1)
                    wire = request.wire
                    wire[request.at] = invoke_id
                    try:
                        lane.send(wire)
                    except OSError as exc:
                        lane.send_failed(invoke_id, exc)
                    else:
                        self.sent.n += len(wire)
                    continue
                pending[invoke_id] = None
                lane.inflight -= 1
                if lane.segments:
                    lane.segments.pop(invoke_id, None)
                waited = f"no reply in {self.attempt_timeout * (attempts + 1):.3g}s"
                tries = f" ({attempts + 1} attempts)" if attempts else ""
                done(OpError(ErrorClass.TIMEOUT, f"{request.label}: {waited}{tries}"), 0)
            busy = busy or lane.inflight > 0
        if busy and self._timer is None and not self.closed:
            self._timer = self.loop.call_later(self.tick, self._sweep)

    async def request(self, request: Request) -> int:
        """Send ``request`` and wait for its outcome; return the reply's size or raise OpError."""
        future: asyncio.Future[int] = self.loop.create_future()

        def done(error: OpError | None, nbytes: int) -> None:
            if future.done():
                return
            if error is None:
                future.set_result(nbytes)
            else:
                future.set_exception(error)

        self.send(request, done)
        return await future

    async def register_foreign_device(self, ttl: int) -> None:
        """Register the first lane with the BBMD at the target's address; renew at half the TTL.

        Waits for the BVLC-Result without a limit: callers bound the wait.
        """
        self._ttl = ttl
        self._registration = self.loop.create_future()
        self._send_registration()
        code = await self._registration
        if code != 0:
            raise OpError(
                ErrorClass.PROTOCOL, "foreign device registration refused", f"bvlc:{code:#06x}"
            )
        self._renewal = self.loop.call_later(ttl / 2, self._renew)

    def fail_waiting(self, error: OpError) -> None:
        """End a Virtual-Address-Resolution or a registration under way with ``error``."""
        for waiting in (self._resolution, self._registration):
            if waiting is not None and not waiting.done():
                waiting.set_exception(error)

    def _send_registration(self) -> None:
        first = self.lanes[0]
        if first.open:
            try:
                first.send(encode_register_foreign_device(self._ttl, self.ipv6))
            except OSError as exc:
                if self._registration is not None and not self._registration.done():
                    self._registration.set_exception(OpError(ErrorClass.REFUSED, str(exc)))

    def _renew(self) -> None:
        self._send_registration()
        self._renewal = self.loop.call_later(self._ttl / 2, self._renew)

    async def resolve(self, wait: float) -> bytes:
        """Learn the first hop's VMAC (BACnet/IPv6) with a Virtual-Address-Resolution from
        the first lane, and frame requests with it; return it.

        Raises :class:`OpError`: ``timeout`` without an answer within ``wait``
        seconds, ``refused`` on an ICMP port-unreachable.
        """
        self._resolution = self.loop.create_future()
        try:
            self.lanes[0].send(encode_virtual_address_resolution())
            async with asyncio.timeout(wait):
                vmac = await self._resolution
        except TimeoutError:
            host, port = self.remote
            raise OpError(
                ErrorClass.TIMEOUT,
                f"no Virtual-Address-Resolution-ACK from [{host}]:{port} in {wait:.3g}s "
                "(is a BACnet/IPv6 device listening there?)",
            ) from None
        except ConnectionRefusedError:
            raise OpError(ErrorClass.REFUSED, "ICMP port unreachable") from None
        except OSError as exc:
            raise OpError(ErrorClass.CONNECT, f"socket error: {exc}") from None
        self.path = Path(self.path.route, vmac)
        for lane in self.lanes:
            lane.vmacs = vmac + (lane.vmac or b"")
        return vmac

    def other(self, data: bytes, lane: Lane) -> None:
        """A datagram other than a reply to ``lane``: a BVLC-Result, the first hop's VMAC, a
        broadcast a BBMD forwards (``forwarded``), or ``stray``."""
        code = bvlc_result(data)
        if code is not None and self._registration is not None and not self._registration.done():
            self._registration.set_result(code)
            return
        if is_forwarded(data):
            self.forwarded += 1
            self.count("forwarded", 1)
            return
        resolution = self._resolution
        if resolution is not None and not resolution.done() and lane.vmac is not None:
            vmac = resolved_vmac(data, lane.vmac)
            if vmac is not None:
                resolution.set_result(vmac)
                return
        self.note_stray()

    def close(self) -> None:
        """Close every lane; requests in flight or parked end as ``closed``."""
        if self.closed:
            return
        self.closed = True
        for handle in (self._timer, self._renewal, self._wake):
            if handle is not None:
                handle.cancel()
        self._timer = self._renewal = self._wake = None
        error = OpError(ErrorClass.CLOSED, "session closed before the reply")
        while self._parked:
            self._parked.popleft()[1](error, 0)
        for lane in self.lanes:
            lane.close(self.loop)


def _uncounted(name: str, n: int) -> None:
    """The counter of a client that reports to no recorder: counts nowhere."""
