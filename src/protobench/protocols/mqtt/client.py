"""One MQTT client connection: the codec on an asyncio protocol, errors mapped once.

:func:`open_connection` connects (TCP, optionally TLS), sends CONNECT and
waits for CONNACK; it raises :class:`OpError` classified as the taxonomy says:
``refused`` (ECONNREFUSED), ``connect`` (other connection and TLS failures),
``timeout`` (no CONNACK in time), ``closed`` (the broker closed first),
``auth`` (a CONNACK refusing the credentials: 3.1.1 codes 4 and 5, MQTT 5
0x86, 0x87, 0x8C), ``protocol`` (any other refusing CONNACK; the code is the
reason code as ``0x..``) and ``local`` (no file descriptor or local port left).

:class:`MqttConnection` then handles the protocol's own traffic by itself:
it acknowledges incoming QoS 1/2 messages (PUBACK, PUBREC then PUBCOMP, with
QoS 2 duplicates suppressed until PUBREL), answers PUBREC with PUBREL, sends
PINGREQ when nothing else was sent for half the keepalive and drops the
connection as ``timeout`` when the PINGRESP does not come. Writes made during
one event-loop turn are coalesced into one ``transport.write``. The transport's
``pause_writing``/``resume_writing`` set :attr:`MqttConnection.paused` and
wake the callbacks given to ``wait_writable``, so publishers stop producing when
the socket's buffer is full instead of queueing without bound.

A packet from the broker longer than the connection's maximum packet size
(``max_packet_size``; sent to MQTT 5 brokers in CONNECT, enforced for 3.1.1
too) is a ``protocol`` error read from its fixed header, before any of it is
buffered; like every other failure that aborts the connection, it is
:attr:`~protobench.vocab.errors.OpError.lost`, so the engine reopens the
sessions on it.

Reads are decoded with :meth:`Decoder.split`: the messages of one read reach
``on_messages`` in one call, as payload offsets into the bytes read (no
object per message), and successful PUBACKs complete their publishes without
an object either; every other packet is decoded in full.

Outgoing QoS 1/2 messages are tracked in ``inflight`` (packet id -> completion
callback, deadline and the publisher's stamps); a periodic sweep fails those
whose acknowledgement did not arrive before the deadline with ``timeout`` (their packet ids are not
reused until a late acknowledgement arrives). When the connection ends, every
pending completion gets the ``closed`` error (with the broker's MQTT 5
DISCONNECT reason code when it sent one).

**Times.** A connection has its own :class:`~protobench.protocols.timestamps.clock.Stamps`
(:attr:`MqttConnection.stamps`; the sessions sharing it have theirs). With a
:class:`~protobench.protocols.timestamps.reactor.Reactor` (the kernel's clock) a
plain TCP connection is a socket of ours read with ``recvmsg``
(:func:`~protobench.protocols.timestamps.transport.open_stamped`): each read's
kernel receive stamp is the connection's ``received``, handed to the publisher
whose PUBACK/PUBCOMP the read completes and, as ``now``, to ``on_messages``;
the coalesced write of requests is stamped (the kernel's send stamp of its first
packet, else the time just before it) and each publisher in it gets that time.
TLS and WebSocket connections, and every connection without a reactor, use the
loop's transports (the user clock: ``now`` is the time the bytes are taken up).
Message stamps and ``now`` are on the engine's clock (:data:`monotonic_ns`); a
message's send time (:meth:`MqttConnection.send_message`) is written into its
payload just before the write that carries it, after the loop turn that queued it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import ssl
import struct
from collections import deque
from collections.abc import Callable
from typing import Final, cast

from protobench.hostutil import fd_limit_text
from protobench.protocols.base import Done
from protobench.protocols.mqtt.codec import (
    PUBACK,
    PUBREC,
    PUBREL,
    V5,
    Ack,
    Connack,
    Connect,
    Decoder,
    Disconnect,
    MalformedPacket,
    PacketTooLarge,
    PingResp,
    Prop,
    Properties,
    Publish,
    Suback,
    Subscribe,
    Unsuback,
    connack_text,
    encode,
    reason_text,
)
from protobench.protocols.mqtt.keepalive import wheel
from protobench.protocols.mqtt.payload import SENT
from protobench.protocols.mqtt.wslink import open_link
from protobench.protocols.sourceaddr import connected_socket
from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.protocols.timestamps.reactor import Reactor
from protobench.protocols.timestamps.send import Writer, request_writer
from protobench.protocols.timestamps.transport import open_stamped
from protobench.protocols.websocket.options import WebSocketOptions
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally
from protobench.vocab.units import format_size

MAX_PACKET_ID: Final = 0xFFFF
V5_UNANSWERED: Final = (
    " (a broker of MQTT 3.1.1 only may wait for the rest of a CONNECT with MQTT 5"
    ' properties instead of refusing it: try version = "3.1.1")'
)
"""Said of an MQTT 5 CONNECT left unanswered (amqtt 0.12 does so)."""
MAX_PACKET_SIZE: Final = 16 * 1024 * 1024
"""The largest packet accepted from the broker by default (bytes, fixed header included)."""
SWEEP_INTERVAL: Final = 0.1
AUTH_REASONS_V311: Final = frozenset({4, 5})
AUTH_REASONS_V5: Final = frozenset({0x86, 0x87, 0x8C})

monotonic_ns = perf_ns
"""The clock of message stamps and receive times: the engine's (``CLOCK_MONOTONIC`` on
Linux, one clock for every process of the host), to which the kernel's receive stamps are
converted: a subscriber's receive stamp and a publisher's payload stamp compare directly."""

type MessageHandler = Callable[[bytes, list[int], int], None]
"""Called with the messages of one read: ``(data, spans, now)``.

The payload of each message is ``data[spans[i]:spans[i + 1]]`` for even ``i``,
in arrival order, and ``now`` is when the bytes arrived (:data:`monotonic_ns`): the
kernel's receive stamp where the connection reads them, else the time they were taken up.
``spans`` is the handler's to keep; ``data`` may be larger than the payloads.
"""


def fd_limit_error(exc: OSError) -> OpError:
    """The ``local`` error for a process out of file descriptors, naming the limit."""
    return OpError(ErrorClass.LOCAL, fd_limit_text(exc.strerror))


def map_os_error(exc: OSError, during: str) -> OpError:
    """Classify a socket error raised while ``during`` (e.g. "connect")."""
    if isinstance(exc, ConnectionRefusedError):
        return OpError(ErrorClass.REFUSED, f"{during}: connection refused")
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        return fd_limit_error(exc)
    if exc.errno == errno.EADDRNOTAVAIL:
        return OpError(
            ErrorClass.LOCAL,
            f"{during}: no local port left ({exc.strerror}): spread the connections over "
            "more source_addresses",
        )
    if isinstance(exc, ssl.SSLError):
        return OpError(ErrorClass.CONNECT, f"{during}: TLS failed: {exc.reason or exc}")
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return OpError(ErrorClass.CLOSED, f"{during}: connection reset")
    return OpError(ErrorClass.CONNECT, f"{during}: {exc.strerror or exc}")


def connack_error(connack: Connack, version: int) -> OpError:
    """The error for a CONNACK that refuses the connection."""
    code = connack.reason
    # 4 and 5 are no MQTT 5 reasons: a v5 client reads them from a 3.1.1 broker.
    auth = AUTH_REASONS_V311 | AUTH_REASONS_V5 if version == V5 else AUTH_REASONS_V311
    cls = ErrorClass.AUTH if code in auth else ErrorClass.PROTOCOL
    return OpError(cls, f"CONNACK refused: {connack_text(code, version)}", code=f"0x{code:02x}")


def _pubacks(pids: list[int]) -> bytes:
    """PUBACKs (success, no properties) for ``pids``, back to back."""
    return struct.pack(f">{len(pids)}I", *[0x4002_0000 | pid for pid in pids])


def _property(props: Properties, ident: int, default: int) -> int:
    for key, value in props:
        if key == ident and isinstance(value, int):
            return value
    return default


_NO_IDS: Final[frozenset[int]] = frozenset()
_pack_sent = SENT.pack_into
_UNTIMED: Final = Stamps()
"""The stamps of tracked messages whose times nobody reads (end markers)."""


class MqttConnection(asyncio.Protocol):
    """The client side of one MQTT connection (see the module docstring).

    Slots, and containers made on first use (``waiting``, the QoS 2 and late
    packet id sets), keep an idle connection small: thousands are held per process.
    """

    __slots__ = (
        "_connack",
        "_disconnect_reason",
        "_flush_handle",
        "_last_sent",
        "_late_ids",
        "_next_id",
        "_out",
        "_ping_outstanding",
        "_qos2_in",
        "_replies",
        "_restamp",
        "_stamping",
        "_sweep_handle",
        "_write_request",
        "alias_max",
        "aliases",
        "closed",
        "decoder",
        "error",
        "inflight",
        "loop",
        "on_messages",
        "paused",
        "resume_waiters",
        "send_quota",
        "sent",
        "sent_packets",
        "stamps",
        "transport",
        "version",
        "waiting",
    )

    _write_request: Writer
    """Writes requests with their send stamped (set once connected)."""

    def __init__(self, version: int, max_packet: int = MAX_PACKET_SIZE) -> None:
        self.version = version
        self.decoder = Decoder(version, max_packet)
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self.error: OpError | None = None
        self.closed: asyncio.Future[OpError] = self.loop.create_future()
        self.paused = False
        self.resume_waiters: list[Callable[[], None]] | None = None
        self.on_messages: MessageHandler | None = None
        self.inflight: dict[int, tuple[Done, float, Stamps]] = {}
        self.waiting: deque[Callable[[], None]] | None = None
        self.send_quota = MAX_PACKET_ID
        self.alias_max = 0
        """The Topic Alias Maximum the broker granted (MQTT 5 CONNACK; 0: none)."""
        self.aliases: dict[str, int] | None = None
        """Topic -> alias set on this connection (publishers with ``topic_alias``)."""
        self.sent_packets = 0
        self.sent = Tally()
        """The bytes written (a session sets its op's tally once the connection is set up)."""
        self.stamps = Stamps()
        """The connection's times: each read's receive stamp, the last stamped write's send."""
        self._out: list[bytes | bytearray] = []
        self._stamping: list[Stamps] | None = None
        """The stamps of the requests in ``_out`` (made on the first one: idle ones have none)."""
        self._restamp: list[tuple[bytearray, int]] | None = None
        """The messages in ``_out`` whose payload's send time the write sets, and where."""
        self._flush_handle: asyncio.Handle | None = None
        self._connack: asyncio.Future[Connack] | None = self.loop.create_future()
        self._replies: dict[int, asyncio.Future[Suback | Unsuback]] | None = None
        self._qos2_in: set[int] | None = None
        self._late_ids: set[int] | None = None
        self._next_id = 0
        self._sweep_handle: asyncio.TimerHandle | None = None
        self._ping_outstanding = False
        self._last_sent = 0
        self._disconnect_reason: int | None = None

    # ------------------------------------------------------------------ transport events

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._write_request = request_writer(transport, self.stamps)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        waiters, self.resume_waiters = self.resume_waiters or (), None
        for waiter in waiters:
            waiter()
        self._release_waiting()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.error is None:
            if self._disconnect_reason is not None:
                code = self._disconnect_reason
                self.error = OpError(
                    ErrorClass.CLOSED,
                    f"broker sent DISCONNECT: {reason_text(code, self.version)}",
                    code=f"0x{code:02x}",
                )
            elif isinstance(exc, OSError):
                self.error = map_os_error(exc, "connection lost")
                if self.error.error_class is not ErrorClass.LOCAL:
                    self.error = OpError(ErrorClass.CLOSED, self.error.detail)
            else:
                self.error = OpError(ErrorClass.CLOSED, "connection closed by the broker")
        self._fail_all(self.error)

    def data_received(self, data: bytes) -> None:
        now = self.stamps.received or monotonic_ns()
        decoder = self.decoder
        try:
            packets = decoder.split(data)
        except PacketTooLarge as exc:
            self.abort(
                OpError(
                    ErrorClass.PROTOCOL,
                    f"packet over max_packet_size ({format_size(exc.limit)}): {exc.size} B",
                )
            )
            return
        except MalformedPacket as exc:
            self.abort(OpError(ErrorClass.PROTOCOL, f"malformed packet from the broker: {exc}"))
            return
        to_ack = decoder.to_ack
        if to_ack:
            self.send(_pubacks(to_ack), len(to_ack))
        acked = decoder.acked
        if acked:
            self._acked(acked)
        messages = decoder.messages
        if messages:
            handler = self.on_messages
            if handler is not None:
                handler(decoder.data, messages, now)
        elif not (to_ack or acked):
            decoder.rest()  # a control packet (CONNACK, PINGRESP): keep no empty lists
        for packet in packets:
            kind = type(packet)
            if kind is Publish:
                self._received_publish(packet, now)  # type: ignore[arg-type]
            elif kind is Ack:
                self._received_ack(packet)  # type: ignore[arg-type]
            elif kind is PingResp:
                self._ping_outstanding = False
            elif kind is Connack:
                future = self._connack
                self._connack = None
                if future is not None and not future.done():
                    future.set_result(packet)  # type: ignore[arg-type]
            elif kind is Suback or kind is Unsuback:
                replies = self._replies
                pid = packet.packet_id  # type: ignore[union-attr]
                reply = replies.pop(pid, None) if replies is not None else None
                if reply is not None and not reply.done():
                    reply.set_result(packet)  # type: ignore[arg-type]
            elif kind is Disconnect:
                self._disconnect_reason = packet.reason  # type: ignore[union-attr]
                if self.transport is not None:
                    self.transport.close()
            else:
                self.abort(
                    OpError(ErrorClass.PROTOCOL, f"unexpected {kind.__name__} from the broker")
                )
                return

    # ------------------------------------------------------------------ incoming traffic

    def _received_publish(self, packet: Publish, now: int) -> None:
        """A PUBLISH the decoder's fast path did not take (QoS 2, MQTT 5 properties...)."""
        qos = packet.qos
        if qos:
            pid = packet.packet_id
            if qos == 1:
                self.send(bytes((0x40, 2, pid >> 8, pid & 0xFF)))
            else:
                self.send(bytes((0x50, 2, pid >> 8, pid & 0xFF)))
                if self._qos2_in is None:
                    self._qos2_in = set()
                elif pid in self._qos2_in:
                    return
                self._qos2_in.add(pid)
        handler = self.on_messages
        if handler is not None:
            handler(packet.payload, [0, len(packet.payload)], now)

    def _acked(self, pids: list[int]) -> None:
        """Successful PUBACKs (the decoder's fast path)."""
        inflight = self.inflight
        received = self.stamps.received
        for pid in pids:
            entry = inflight.pop(pid, None)
            if entry is None:
                if self._late_ids:
                    self._late_ids.discard(pid)
            else:
                entry[2].received = received
                entry[0](None, 4)
        if self.waiting:
            self._release_waiting()

    def _received_ack(self, ack: Ack) -> None:
        kind = ack.kind
        pid = ack.packet_id
        if kind == PUBREL:
            if self._qos2_in:
                self._qos2_in.discard(pid)
            self.send(bytes((0x70, 2, pid >> 8, pid & 0xFF)))
            return
        if kind == PUBREC and ack.reason < 0x80:
            self.send(bytes((0x62, 2, pid >> 8, pid & 0xFF)))
            return
        entry = self.inflight.pop(pid, None)
        if entry is None:
            if self._late_ids:
                self._late_ids.discard(pid)
            return
        if ack.reason >= 0x80:
            entry[0](
                OpError(
                    ErrorClass.PROTOCOL,
                    f"publish refused: {reason_text(ack.reason, self.version)}",
                    code=f"0x{ack.reason:02x}",
                ),
                0,
            )
        else:
            entry[2].received = self.stamps.received
            entry[0](None, 4 if kind == PUBACK else 8)
        if self.waiting:
            self._release_waiting()

    # ------------------------------------------------------------------ outgoing traffic

    def send(self, data: bytes | bytearray, packets: int = 1, stamps: Stamps | None = None) -> None:
        """Queue the bytes of ``packets`` packets; one loop turn's queue goes out in one write.

        ``stamps`` (a request's) get the send time of that write (see the module's docstring).
        """
        self._out.append(data)
        self.sent_packets += packets
        if stamps is not None:
            if self._stamping is None:
                self._stamping = []
            self._stamping.append(stamps)
        if self._flush_handle is None:
            self._flush_handle = self.loop.call_soon(self._flush)

    def send_message(self, frame: bytearray, sent_at: int, stamps: Stamps) -> None:
        """Queue a PUBLISH of a stamped payload (a request, as :meth:`send`), whose send time
        (at ``sent_at`` in ``frame``) the write sets just before it."""
        self.send(frame, 1, stamps)
        if self._restamp is None:
            self._restamp = []
        self._restamp.append((frame, sent_at))

    def _flush(self) -> None:
        self._flush_handle = None
        out = self._out
        stamping = self._stamping
        restamp = self._restamp
        if not out or self.transport is None or self.error is not None:
            out.clear()
            if stamping:
                stamping.clear()
            if restamp:
                restamp.clear()
            return
        if restamp:
            now = monotonic_ns()
            for frame, at in restamp:
                _pack_sent(frame, at, now)
            restamp.clear()
        data = out[0] if len(out) == 1 else b"".join(out)
        if stamping:
            self._write_request(data)
            sent = self.stamps.sent
            for stamps in stamping:
                stamps.sent = sent
            stamping.clear()
        else:
            self.transport.write(data)
        self.sent.n += len(data)
        out.clear()

    def next_packet_id(self) -> int:
        """A packet identifier not in flight (nor timed out and still unacknowledged)."""
        pid = self._next_id % MAX_PACKET_ID + 1
        inflight = self.inflight
        late = self._late_ids or _NO_IDS
        if pid in inflight or pid in late:
            for _ in range(MAX_PACKET_ID):
                pid = pid % MAX_PACKET_ID + 1
                if pid not in inflight and pid not in late:
                    break
            else:
                raise OpError(ErrorClass.LOCAL, "no free MQTT packet identifier (65535 in flight)")
        self._next_id = pid
        return pid

    def track(self, done: Done, timeout: float, stamps: Stamps | None = None) -> int:
        """A packet identifier for an outgoing QoS 1/2 message, remembered with ``done``.

        ``done`` is called on the message's PUBACK/PUBCOMP (the receive stamp of the read
        that completed it in ``stamps``, the publisher's) or, after ``timeout`` seconds
        without it, with a ``timeout`` error.
        """
        pid = self.next_packet_id()
        self.inflight[pid] = (done, self.loop.time() + timeout, stamps or _UNTIMED)
        if self._sweep_handle is None:
            self._sweep_handle = self.loop.call_later(SWEEP_INTERVAL, self._sweep)
        return pid

    def _sweep(self) -> None:
        self._sweep_handle = None
        if self.error is not None:
            return
        now = self.loop.time()
        expired = []
        for pid, (_, deadline, _) in self.inflight.items():
            if deadline > now:
                break
            expired.append(pid)
        if expired and self._late_ids is None:
            self._late_ids = set()
        for pid in expired:
            done = self.inflight.pop(pid)[0]
            self._late_ids.add(pid)  # type: ignore[union-attr]
            done(OpError(ErrorClass.TIMEOUT, "no PUBACK/PUBCOMP in time"), 0)
        if expired:
            self._release_waiting()
        if self.inflight:
            self._sweep_handle = self.loop.call_later(SWEEP_INTERVAL, self._sweep)

    def wait_writable(self, resumed: Callable[[], None]) -> None:
        """Call ``resumed`` once the transport's buffer has room again (``resume_writing``)."""
        if self.resume_waiters is None:
            self.resume_waiters = []
        self.resume_waiters.append(resumed)

    def wait_window(self, start: Callable[[], None]) -> None:
        """Call ``start`` once the in-flight window and the socket have room (in order)."""
        if self.waiting is None:
            self.waiting = deque()
        self.waiting.append(start)

    def _release_waiting(self) -> None:
        """Start queued publishes while the window and the socket allow."""
        waiting = self.waiting
        while waiting and not self.paused and len(self.inflight) < self.send_quota:
            waiting.popleft()()

    # ------------------------------------------------------------------ requests

    async def wait_connack(self) -> Connack:
        assert self._connack is not None
        connack = await self._connack
        if self.version == V5:
            self.send_quota = _property(connack.properties, Prop.RECEIVE_MAXIMUM, MAX_PACKET_ID)
            self.alias_max = _property(connack.properties, Prop.TOPIC_ALIAS_MAXIMUM, 0)
        return connack

    async def subscribe(self, topics: list[tuple[str, int]], within: float) -> Suback:
        """Send SUBSCRIBE and return the SUBACK (its reason codes are the caller's to check)."""
        pid = self.next_packet_id()
        reply: asyncio.Future[Suback | Unsuback] = self.loop.create_future()
        if self._replies is None:
            self._replies = {}
        self._replies[pid] = reply
        self.send(encode(Subscribe(pid, tuple(topics)), self.version))
        try:
            async with asyncio.timeout(within):
                suback = await reply
        except TimeoutError:
            self._replies.pop(pid, None)
            raise OpError(ErrorClass.TIMEOUT, "no SUBACK in time") from None
        assert isinstance(suback, Suback)
        return suback

    def start_keepalive(self, keepalive: float) -> None:
        """Ping when nothing was sent for ``keepalive / 2`` (0 = no keepalive), on the
        shared :mod:`.keepalive` wheel."""
        if keepalive > 0:
            wheel(keepalive / 2).add(self)

    def keepalive_tick(self) -> bool:
        """This connection's keepalive turn; False once it has ended."""
        if self.error is not None:
            return False
        if self._ping_outstanding:
            self.abort(OpError(ErrorClass.TIMEOUT, "keepalive: no PINGRESP from the broker"))
            return False
        if self.sent_packets == self._last_sent:
            self._ping_outstanding = True
            self.send(b"\xc0\x00")
        self._last_sent = self.sent_packets
        return True

    # ------------------------------------------------------------------ closing

    def _fail_all(self, error: OpError) -> None:
        for handle in (self._sweep_handle, self._flush_handle):
            if handle is not None:
                handle.cancel()
        self._sweep_handle = self._flush_handle = None
        self._out.clear()
        if self._stamping:
            self._stamping.clear()
        if self._restamp:
            self._restamp.clear()
        futures: list[asyncio.Future[Connack] | asyncio.Future[Suback | Unsuback]] = list(
            (self._replies or {}).values()
        )
        if self._connack is not None:
            futures.append(self._connack)
        for future in futures:
            if not future.done():
                future.set_exception(error)
                future.exception()  # a failure nobody waits for is not worth a warning
        self._replies = None
        inflight, self.inflight = self.inflight, {}
        for done, _, _ in inflight.values():
            done(error, 0)
        waiting, self.waiting = self.waiting or (), None
        for start in waiting:
            start()
        waiters, self.resume_waiters = self.resume_waiters or (), None
        for waiter in waiters:
            waiter()
        if not self.closed.done():
            self.closed.set_result(error)

    def abort(self, error: OpError) -> None:
        """Drop the connection now, failing everything pending with ``error`` (marked
        :attr:`~protobench.vocab.errors.OpError.lost`: the sessions on it must be reopened)."""
        error.lost = True
        if self.error is None:
            self.error = error
        if self.transport is not None:
            self.transport.abort()
        else:
            self._fail_all(error)

    def disconnect(self) -> None:
        """Send DISCONNECT and close (no wait); later errors are ``closed``."""
        if self.error is not None or self.transport is None:
            return
        self.error = OpError(ErrorClass.CLOSED, "connection closed by the client")
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out.append(encode(Disconnect(), self.version))
        self.transport.write(b"".join(self._out))
        self._out.clear()
        self.transport.close()


async def open_connection(
    host: str,
    port: int,
    connect: Connect,
    *,
    version: int,
    within: float,
    ssl_context: ssl.SSLContext | None = None,
    source: str | None = None,
    websocket: tuple[str, WebSocketOptions] | None = None,
    index: int = 0,
    max_packet: int = MAX_PACKET_SIZE,
    reactor: Reactor | None = None,
) -> MqttConnection:
    """Connect (from ``source`` when given), send ``connect`` and wait for a successful
    CONNACK, or raise :class:`OpError`; packets over ``max_packet`` bytes are refused.
    ``websocket`` (its URL and options) carries the connection over a WebSocket
    (:mod:`.wslink`; session ``index`` picks its source). With a ``reactor`` a plain TCP
    connection (no TLS, no WebSocket) reads the kernel's timestamps (the module's
    docstring)."""
    loop = asyncio.get_running_loop()
    conn = MqttConnection(version, max_packet)
    hostname = host if ssl_context else None
    try:
        async with asyncio.timeout(within):
            if websocket is not None:
                await open_link(websocket[0], websocket[1], conn, within, index)
            elif reactor is not None and ssl_context is None:
                await open_stamped(
                    lambda: conn, host, port, reactor=reactor, stamps=conn.stamps, source=source
                )
            elif source is None:
                await loop.create_connection(
                    lambda: conn, host, port, ssl=ssl_context, server_hostname=hostname
                )
            else:
                sock = await connected_socket(host, port, source)
                await loop.create_connection(
                    lambda: conn, sock=sock, ssl=ssl_context, server_hostname=hostname
                )
            conn.send(encode(connect, version))
            connack = await conn.wait_connack()
    except TimeoutError:
        conn.abort(OpError(ErrorClass.TIMEOUT, "connect timed out"))
        if conn.transport is None:
            raise OpError(ErrorClass.TIMEOUT, f"no TCP connection within {within:g}s") from None
        hint = V5_UNANSWERED if version == V5 else ""
        raise OpError(ErrorClass.TIMEOUT, f"no CONNACK within {within:g}s{hint}") from None
    except OSError as exc:
        raise map_os_error(exc, "connect") from None
    if connack.reason:
        error = connack_error(connack, version)
        conn.abort(error)
        raise error
    return conn


async def subscribe_or_close(
    conn: MqttConnection, topics: list[tuple[str, int]], within: float
) -> bool:
    """Subscribe ``conn`` to ``topics``; on a failure or a refused filter, close it (False)."""
    try:
        suback = await conn.subscribe(topics, within=within)
    except OpError:
        conn.disconnect()
        return False
    if any(code >= 0x80 for code in suback.reasons):
        conn.disconnect()
        return False
    return True
