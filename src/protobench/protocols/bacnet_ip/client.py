"""The lean BACnet/IP client: one UDP socket, pre-encoded requests, replies matched by invoke ID.

:class:`DatagramClient` is an asyncio datagram protocol whose socket binds the
configured local address (127.0.0.1 by default) on an ephemeral port and is
connected to the target, so the kernel drops datagrams from anyone else and
reports an ICMP port-unreachable as ``refused``. Up to 256 requests may be in
flight (one per invoke ID). A request is a datagram concatenation and one
``sendto``; a reply is matched by its invoke ID, and the :class:`Request`
that was sent checks it. There is no task, future or timer per request: one
timer sweeps the deadlines a few times per attempt timeout, resends when
retries are configured and fails the request with ``timeout`` at the end.

The client can register as a foreign device with a BBMD at the target's
address and renews the registration at half its time-to-live.
"""

from __future__ import annotations

import asyncio
import time
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

monotonic = time.monotonic
Pending = tuple[Done, Request, bytes, int]


class DatagramClient(asyncio.DatagramProtocol):
    """Requests to one BACnet/IP device (directly or through one router)."""

    def __init__(self, route: Route | None, timeout: float, retries: int) -> None:
        self.route = route
        self.retries = retries
        self.attempt_timeout = timeout / (retries + 1)
        self.tick = max(_MIN_TICK, self.attempt_timeout / _SWEEPS_PER_ATTEMPT)
        self.resent = 0
        self.stray = 0
        self.transport: asyncio.DatagramTransport | None = None
        self._pending: list[Pending | None] = [None] * INVOKE_IDS
        self._deadline = [0.0] * INVOKE_IDS
        self._next = 0
        self._inflight = 0
        self._timer: asyncio.TimerHandle | None = None
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
    ) -> DatagramClient:
        """A client bound to ``local_host`` (ephemeral port), connected to ``host:port``."""
        loop = asyncio.get_running_loop()
        _, client = await loop.create_datagram_endpoint(
            lambda: cls(route, request_timeout, retries),
            local_addr=(local_host, 0),
            remote_addr=(host, port),
        )
        return client

    @property
    def inflight(self) -> int:
        return self._inflight

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def send(self, request: Request, done: Done) -> None:
        """Send ``request``; ``done(error or None, bytes)`` is called once with the outcome."""
        transport = self.transport
        pending = self._pending
        invoke_id = self._next
        if pending[invoke_id] is not None:
            found = self._free_invoke_id()
            if transport is None or found < 0:
                reason = "session closed" if transport is None else "256 requests in flight"
                asyncio.get_running_loop().call_soon(done, OpError(ErrorClass.LOCAL, reason), 0)
                return
            invoke_id = found
        elif transport is None:
            asyncio.get_running_loop().call_soon(
                done, OpError(ErrorClass.CLOSED, "session closed"), 0
            )
            return
        self._next = (invoke_id + 1) & 0xFF
        wire = request.head + bytes((invoke_id,)) + request.tail
        pending[invoke_id] = (done, request, wire, 0)
        self._deadline[invoke_id] = monotonic() + self.attempt_timeout
        self._inflight += 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.tick, self._sweep)
        transport.sendto(wire)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        if len(data) < 9 or data[1] != _ORIGINAL_UNICAST:
            self._other(data)
            return
        if data[0] != _BVLC_TYPE or (data[2] << 8 | data[3]) != len(data):
            self.stray += 1
            return
        start = 6 if data[5] == 0 and self.route is None else self._apdu_start(data)
        if start < 0 or start + 3 > len(data) or (data[start] >> 4) not in _ACK_TYPES:
            self.stray += 1
            return
        invoke_id = data[start + 1]
        entry = self._pending[invoke_id]
        if entry is None:
            self.stray += 1
            return
        self._pending[invoke_id] = None
        self._inflight -= 1
        done, request = entry[0], entry[1]
        error = request.accept(data, start)
        if error is None:
            done(None, len(data))
        else:
            done(error, 0)

    def _apdu_start(self, data: bytes) -> int:
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
        expected = None if self.route is None else (self.route.dnet, self.route.dadr)
        return offset if source == expected else -1

    def _free_invoke_id(self) -> int:
        for invoke_id, entry in enumerate(self._pending):
            if entry is None:
                return invoke_id
        return -1

    def _sweep(self) -> None:
        self._timer = None
        now = monotonic()
        pending, deadline = self._pending, self._deadline
        for invoke_id in range(INVOKE_IDS):
            entry = pending[invoke_id]
            if entry is None or deadline[invoke_id] > now:
                continue
            done, request, wire, attempts = entry
            if attempts < self.retries and self.transport is not None:
                pending[invoke_id] = (done, request, wire, attempts + 1)
                deadline[invoke_id] = now + self.attempt_timeout
                self.resent += 1
                self.transport.sendto(wire)
                continue
            pending[invoke_id] = None
            self._inflight -= 1
            waited = self.attempt_timeout * (attempts + 1)
            done(OpError(ErrorClass.TIMEOUT, f"{request.label}: no reply in {waited:.3g}s"), 0)
        if self._inflight and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.tick, self._sweep)

    def _fail_all(self, error: OpError) -> None:
        for invoke_id, entry in enumerate(self._pending):
            if entry is not None:
                self._pending[invoke_id] = None
                self._inflight -= 1
                entry[0](error, 0)

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, ConnectionRefusedError):
            self._fail_all(OpError(ErrorClass.REFUSED, "ICMP port unreachable"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._cancel_timers()
        self._fail_all(OpError(ErrorClass.CLOSED, "session closed before the reply"))

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
        """Register with the BBMD at the target's address; renew at half the TTL.

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
        if self.transport is not None:
            self.transport.sendto(encode_register_foreign_device(self._ttl))

    def _renew(self) -> None:
        self._send_registration()
        self._renewal = asyncio.get_running_loop().call_later(self._ttl / 2, self._renew)

    def _other(self, data: bytes) -> None:
        """A datagram other than an Original-Unicast-NPDU: a BVLC-Result, or ignored."""
        if len(data) != 6 or data[0] != _BVLC_TYPE or data[1] != _BVLC_RESULT or data[3] != 6:
            return
        if self._registration is not None and not self._registration.done():
            self._registration.set_result((data[4] << 8) | data[5])

    def _cancel_timers(self) -> None:
        for handle in (self._timer, self._renewal):
            if handle is not None:
                handle.cancel()
        self._timer = self._renewal = None

    def close(self) -> None:
        """Close the socket; requests still in flight end as ``closed``."""
        if self.transport is not None:
            self.transport.close()
