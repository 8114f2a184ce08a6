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
_ACK_TYPES = frozenset({0x2, 0x3, 0x5, 0x6, 0x7})
_SWEEPS_PER_ATTEMPT = 8
_MIN_TICK = 0.005
MAX_LANES = 1024
NEVER = -1e18

monotonic = time.monotonic
Pending = tuple[Done, Request, bytes, int]


class Lane(asyncio.DatagramProtocol):
    """One socket of a client, with its 256 invoke IDs."""

    def __init__(self, client: DatagramClient) -> None:
        self.client = client
        self.transport: asyncio.DatagramTransport | None = None
        self.pending: list[Pending | None] = [None] * INVOKE_IDS
        self.deadline = [0.0] * INVOKE_IDS
        self.used = [NEVER] * INVOKE_IDS
        self.next = 0
        self.inflight = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        client = self.client
        if len(data) < 9 or data[1] != _ORIGINAL_UNICAST:
            client.other(data)
            return
        if data[0] != _BVLC_TYPE or (data[2] << 8 | data[3]) != len(data):
            client.stray += 1
            return
        start = 6 if data[5] == 0 and client.route is None else client.apdu_start(data)
        if start < 0 or start + 3 > len(data) or (data[start] >> 4) not in _ACK_TYPES:
            client.stray += 1
            return
        invoke_id = data[start + 1]
        entry = self.pending[invoke_id]
        if entry is None:
            client.stray += 1
            return
        self.pending[invoke_id] = None
        self.inflight -= 1
        client.inflight -= 1
        error = entry[1].accept(data, start)
        if error is None:
            entry[0](None, len(data))
        else:
            entry[0](error, 0)

    def fail_all(self, error: OpError) -> None:
        for invoke_id, entry in enumerate(self.pending):
            if entry is not None:
                self.pending[invoke_id] = None
                self.inflight -= 1
                self.client.inflight -= 1
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
        self.inflight = 0
        self.resent = 0
        self.stray = 0
        self.closed = False
        self._lane_index = 0
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
        await client._add_lane()
        return client

    async def _add_lane(self) -> None:
        loop = asyncio.get_running_loop()
        transport, lane = await loop.create_datagram_endpoint(
            lambda: Lane(self), local_addr=(self.local_host, 0), remote_addr=self.remote
        )
        if self.closed:
            transport.close()
            raise OpError(ErrorClass.CLOSED, "session closed")
        self.lanes.append(lane)

    def send(self, request: Request, done: Done) -> None:
        """Send ``request``; ``done(error or None, bytes)`` is called once with the outcome."""
        now = monotonic()
        lane = self.lanes[self._lane_index]
        invoke_id = lane.next
        if (
            self._parked
            or lane.pending[invoke_id] is not None
            or now - lane.used[invoke_id] < self.reuse_after
        ):
            if self._parked or not self._rotate(now):
                self._park(request, done, now)
                return
            lane = self.lanes[self._lane_index]
            invoke_id = lane.next
        self._transmit(lane, invoke_id, request, done, now)

    def _transmit(
        self, lane: Lane, invoke_id: int, request: Request, done: Done, now: float
    ) -> None:
        transport = lane.transport
        if transport is None:
            asyncio.get_running_loop().call_soon(
                done, OpError(ErrorClass.CLOSED, "session closed"), 0
            )
            return
        lane.next = (invoke_id + 1) & 0xFF
        lane.used[invoke_id] = now
        wire = request.head + bytes((invoke_id,)) + request.tail
        lane.pending[invoke_id] = (done, request, wire, 0)
        lane.deadline[invoke_id] = now + self.attempt_timeout
        lane.inflight += 1
        self.inflight += 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.tick, self._sweep)
        transport.sendto(wire)

    def _usable(self, lane: Lane, now: float) -> bool:
        invoke_id = lane.next
        return (
            lane.transport is not None
            and lane.pending[invoke_id] is None
            and now - lane.used[invoke_id] >= self.reuse_after
        )

    def _rotate(self, now: float) -> bool:
        """Move to the next lane whose next invoke ID is usable; False if there is none."""
        count = len(self.lanes)
        for step in range(1, count + 1):
            index = (self._lane_index + step) % count
            if self._usable(self.lanes[index], now):
                self._lane_index = index
                return True
        return False

    def _park(self, request: Request, done: Done, now: float) -> None:
        if self.closed:
            asyncio.get_running_loop().call_soon(
                done, OpError(ErrorClass.CLOSED, "session closed"), 0
            )
            return
        self._parked.append((request, done))
        self._need_capacity(now)

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
            await self._add_lane()
            self._lane_index = len(self.lanes) - 1
        except (OSError, OpError):
            self._max_lanes = len(self.lanes)
        finally:
            self._growth = None
        self._unpark()

    def _unpark(self) -> None:
        self._wake = None
        parked = self._parked
        while parked:
            now = monotonic()
            if not self._usable(self.lanes[self._lane_index], now) and not self._rotate(now):
                self._need_capacity(now)
                return
            request, done = parked.popleft()
            lane = self.lanes[self._lane_index]
            self._transmit(lane, lane.next, request, done, now)

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
        for lane in self.lanes:
            if not lane.inflight:
                continue
            pending, deadline = lane.pending, lane.deadline
            for invoke_id in range(INVOKE_IDS):
                entry = pending[invoke_id]
                if entry is None or deadline[invoke_id] > now:
                    continue
                done, request, wire, attempts = entry
                if attempts < self.retries and lane.transport is not None:
                    pending[invoke_id] = (done, request, wire, attempts + 1)
                    deadline[invoke_id] = now + self.attempt_timeout
                    lane.used[invoke_id] = now
                    self.resent += 1
                    lane.transport.sendto(wire)
                    continue
                pending[invoke_id] = None
                lane.inflight -= 1
                self.inflight -= 1
                waited = self.attempt_timeout * (attempts + 1)
                done(OpError(ErrorClass.TIMEOUT, f"{request.label}: no reply in {waited:.3g}s"), 0)
        if self.inflight and self._timer is None and not self.closed:
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
