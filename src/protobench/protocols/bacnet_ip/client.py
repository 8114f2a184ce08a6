"""The lean BACnet/IP client: pre-encoded requests over UDP, replies matched by invoke ID.

A :class:`DatagramClient` owns one or more :class:`Lane` sockets, each bound
to the configured local address (127.0.0.1 by default) on an ephemeral port
and connected to the target, so the kernel drops datagrams from anyone else
and reports an ICMP port-unreachable (``refused``). A lane has 256 invoke IDs.
Sending a request is a datagram concatenation and one ``sendto``; its reply
is matched by invoke ID and checked by the :class:`Request` that was sent.
There is no task, future or timer per request: one timer sweeps the
deadlines a few times per attempt timeout, resends when retries are
configured, and fails a request with ``timeout`` at the end.

**Invoke-ID reuse.** A BACnet server remembers each (client address, invoke
ID) it answered for a while and answers a request carrying the same pair
with the remembered reply, without looking at the request (a retransmission,
for all it knows; bac-py's server does so for 6 s). A client sending
thousands of requests per second from one socket wraps its 256 IDs within
that window and receives stale replies. So an (address, ID) pair is reused
only ``reuse_after`` seconds after its last use: when the next ID of every
lane is still too recent, the client opens another lane (a new address). In
the steady state a session has ``rate × reuse_after / 256`` lanes. A request
that finds no usable ID waits (parked) until a lane opens or an ID cools
down; the wait is part of its latency.

The client can register its first lane as a foreign device with a BBMD at
the target's address; it renews the registration at half its time-to-live.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import cast

from protobench.protocols.bacnet_ip.codec import (
    INVOKE_ID_BYTES,
    INVOKE_IDS,
    Request,
    Route,
    encode_register_foreign_device,
)
from protobench.protocols.base import Done, ErrorClass, OpError

_BVLC_TYPE = 0x81
_ORIGINAL_UNICAST = 0x0A
_BVLC_RESULT = 0x00
_NETWORK_MESSAGE = 0x80
_HAS_DNET = 0x20
_HAS_SNET = 0x08
_SEGMENT_ACK = 0x4
_SIMPLE_ACK = 0x2
_SWEEPS_PER_ATTEMPT = 8
_MIN_TICK = 0.005
MAX_LANES = 1024
NEVER = -1e18

monotonic = time.monotonic
Pending = tuple[Done, Request, bytes, int]


class Lane(asyncio.DatagramProtocol):
    """One socket of a client, with its 256 invoke IDs.

    ``used[i]`` is when invoke ID ``i`` was last sent (its deadline is that
    plus the attempt timeout); ``pending[i]`` is its request while in flight.
    """

    def __init__(self, client: DatagramClient) -> None:
        self.client = client
        self.direct = client.route is None
        self.transport: asyncio.DatagramTransport | None = None
        self.pending: list[Pending | None] = [None] * INVOKE_IDS
        self.used = [NEVER] * INVOKE_IDS
        self.next = 0
        self.inflight = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        size = len(data)
        if (
            size < 9
            or data[1] != _ORIGINAL_UNICAST
            or data[0] != _BVLC_TYPE
            or (data[2] << 8 | data[3]) != size
        ):
            self.client.other(data)
            return
        if data[5] == 0 and self.direct:
            start = 6
        else:
            start = self.client.apdu_start(data)
            if start < 0 or start + 3 > size:
                self.client.stray += 1
                return
        kind = data[start] >> 4
        entry = self.pending[data[start + 1]]
        if entry is None or kind < _SIMPLE_ACK or kind == _SEGMENT_ACK:
            self.client.stray += 1
            return
        self.pending[data[start + 1]] = None
        self.inflight -= 1
        error = entry[1].accept(data, start)
        if error is None:
            entry[0](None, size)
        else:
            entry[0](error, 0)

    def fail_all(self, error: OpError) -> None:
        for invoke_id, entry in enumerate(self.pending):
            if entry is not None:
                self.pending[invoke_id] = None
                self.inflight -= 1
                entry[0](error, 0)

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, ConnectionRefusedError):
            self.fail_all(OpError(ErrorClass.REFUSED, "ICMP port unreachable"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.fail_all(OpError(ErrorClass.CLOSED, "session closed before the reply"))


class DatagramClient:
    """Requests to one BACnet/IP device (directly or through one router)."""

    def __init__(
        self,
        host: str,
        port: int,
        local_host: str,
        route: Route | None,
        request_timeout: float,
        retries: int = 0,
        reuse_after: float = 0.0,
    ) -> None:
        self.remote = (host, port)
        self.local_host = local_host
        self.route = route
        self.expected_source = None if route is None else (route.dnet, route.dadr)
        self.retries = retries
        self.attempt_timeout = request_timeout / (retries + 1)
        self.tick = max(_MIN_TICK, self.attempt_timeout / _SWEEPS_PER_ATTEMPT)
        self.reuse_after = reuse_after
        self.lanes: list[Lane] = []
        self.resent = 0
        self.stray = 0
        self.closed = False
        self._lane: Lane | None = None
        self._parked: deque[tuple[Request, Done]] = deque()
        self._growth: asyncio.Task[None] | None = None
        self._max_lanes = MAX_LANES
        self._timer: asyncio.TimerHandle | None = None
        self._wake: asyncio.TimerHandle | None = None
        self._registration: asyncio.Future[int] | None = None
        self._renewal: asyncio.TimerHandle | None = None
        self._ttl = 0

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        local_host: str,
        route: Route | None,
        request_timeout: float,
        retries: int = 0,
        reuse_after: float = 0.0,
    ) -> DatagramClient:
        """A client with one lane bound to ``local_host``, connected to ``host:port``."""
        client = cls(host, port, local_host, route, request_timeout, retries, reuse_after)
        client._lane = await client._add_lane()
        return client

    async def _add_lane(self) -> Lane:
        loop = asyncio.get_running_loop()
        transport, lane = await loop.create_datagram_endpoint(
            lambda: Lane(self), local_addr=(self.local_host, 0), remote_addr=self.remote
        )
        if self.closed:
            transport.close()
            raise OpError(ErrorClass.CLOSED, "session closed")
        self.lanes.append(lane)
        return lane

    def send(self, request: Request, done: Done) -> None:
        """Send ``request``; ``done(error or None, bytes)`` is called once with the outcome."""
        now = monotonic()
        lane = self._lane
        assert lane is not None
        invoke_id = lane.next
        if (
            lane.transport is None
            or self._parked
            or lane.pending[invoke_id] is not None
            or now - lane.used[invoke_id] < self.reuse_after
        ):
            self._send_elsewhere(request, done, now)
        else:
            self._transmit(lane, request, done, now)

    def _transmit(self, lane: Lane, request: Request, done: Done, now: float) -> None:
        """Send on ``lane``, whose next invoke ID is usable."""
        invoke_id = lane.next
        lane.next = (invoke_id + 1) & 0xFF
        lane.used[invoke_id] = now
        wire = request.head + INVOKE_ID_BYTES[invoke_id] + request.tail
        lane.pending[invoke_id] = (done, request, wire, 0)
        lane.inflight += 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.tick, self._sweep)
        lane.transport.sendto(wire)  # type: ignore[union-attr]  # usable lanes have one

    def _send_elsewhere(self, request: Request, done: Done, now: float) -> None:
        """The current lane cannot send now: use another, or park the request."""
        if self.closed:
            asyncio.get_running_loop().call_soon(
                done, OpError(ErrorClass.CLOSED, "session closed"), 0
            )
            return
        if not self._parked:
            lane = self._usable_lane(now)
            if lane is not None:
                self._transmit(lane, request, done, now)
                return
        self._parked.append((request, done))
        self._need_capacity(now)

    def _usable(self, lane: Lane, now: float) -> bool:
        invoke_id = lane.next
        return (
            lane.transport is not None
            and lane.pending[invoke_id] is None
            and now - lane.used[invoke_id] >= self.reuse_after
        )

    def _usable_lane(self, now: float) -> Lane | None:
        """The current lane, or the next one whose next invoke ID may be used now."""
        current = self._lane
        if current is not None and self._usable(current, now):
            return current
        count = len(self.lanes)
        first = self.lanes.index(current) if current is not None else -1
        for step in range(1, count + 1):
            lane = self.lanes[(first + step) % count]
            if self._usable(lane, now):
                self._lane = lane
                return lane
        return None

    def _unpark(self) -> None:
        """Send parked requests while some lane can; else grow or wait for an ID to cool."""
        self._wake = None
        parked = self._parked
        while parked:
            now = monotonic()
            lane = self._usable_lane(now)
            if lane is None:
                self._need_capacity(now)
                return
            request, done = parked.popleft()
            self._transmit(lane, request, done, now)

    def _need_capacity(self, now: float) -> None:
        """Open another lane, or (at the lane limit) wake up when an invoke ID cools down."""
        loop = asyncio.get_running_loop()
        if len(self.lanes) < self._max_lanes:
            if self._growth is None:
                self._growth = loop.create_task(self._grow())
        elif self._wake is None:
            soonest = min(lane.used[lane.next] for lane in self.lanes)
            delay = max(_MIN_TICK, soonest + self.reuse_after - now)
            self._wake = loop.call_later(delay, self._unpark)

    async def _grow(self) -> None:
        try:
            self._lane = await self._add_lane()
        except (OSError, OpError):
            self._max_lanes = len(self.lanes)
        finally:
            self._growth = None
        self._unpark()

    def apdu_start(self, data: bytes) -> int:
        """Where the APDU starts in a datagram whose NPDU carries addresses; -1 if not ours."""
        control = data[5]
        if data[4] != 1 or control & _NETWORK_MESSAGE:
            return -1
        offset = 6
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
                done, request, wire, attempts = entry
                if attempts < self.retries and lane.transport is not None:
                    pending[invoke_id] = (done, request, wire, attempts + 1)
                    used[invoke_id] = now
                    self.resent += 1
                    lane.transport.sendto(wire)
                    continue
                pending[invoke_id] = None
                lane.inflight -= 1
                waited = self.attempt_timeout * (attempts + 1)
                done(OpError(ErrorClass.TIMEOUT, f"{request.label}: no reply in {waited:.3g}s"), 0)
            busy = busy or lane.inflight > 0
        if busy and self._timer is None and not self.closed:
            self._timer = asyncio.get_running_loop().call_later(self.tick, self._sweep)

    async def request(self, request: Request) -> int:
        """Send ``request`` and wait for its outcome; return the reply's size or raise OpError."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()

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
        self._registration = asyncio.get_running_loop().create_future()
        self._send_registration()
        code = await self._registration
        if code != 0:
            raise OpError(
                ErrorClass.PROTOCOL, "foreign device registration refused", f"bvlc:{code:#06x}"
            )
        self._renewal = asyncio.get_running_loop().call_later(ttl / 2, self._renew)

    def _send_registration(self) -> None:
        if self.lanes and self.lanes[0].transport is not None:
            self.lanes[0].transport.sendto(encode_register_foreign_device(self._ttl))

    def _renew(self) -> None:
        self._send_registration()
        self._renewal = asyncio.get_running_loop().call_later(self._ttl / 2, self._renew)

    def other(self, data: bytes) -> None:
        """A datagram other than an Original-Unicast-NPDU: a BVLC-Result, or ignored."""
        if len(data) != 6 or data[0] != _BVLC_TYPE or data[1] != _BVLC_RESULT or data[3] != 6:
            self.stray += 1
            return
        if self._registration is not None and not self._registration.done():
            self._registration.set_result((data[4] << 8) | data[5])

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
            if lane.transport is not None:
                lane.transport.close()
