"""The sessions of the four MQTT operations: publish, subscribe, connect and idle.

``publish`` (:class:`PublishSession`, a callback session) sends one PUBLISH per
exchange. QoS 1/2 exchanges complete on PUBACK/PUBCOMP; QoS 0 exchanges
complete once the message is queued on the connection: completions are handed
out in bursts of at most :data:`BURST` per event-loop turn, and not at all while
the transport's buffer is full (back-pressure), so a back-to-back publisher
runs as fast as the broker reads and never faster; held longer than the
timeout, they fail with ``timeout``. Sessions of a group share connections
``inflight`` at a time (:class:`~protobench.protocols.sharing.ConnectionShare`).
When the run stops, each publisher sends its end marker (once its own queued
QoS 1/2 messages are out), carrying how many messages it sent.

``subscribe`` (:class:`SubscribeSession`) records, for every stamped message,
the end-to-end latency from the publisher's send time (for a will marker: from
its connection's CONNECT, counted as ``wills``), and the counters
``received``, ``lost``, ``duplicated``, ``out_of_order`` (per publisher, see
:mod:`~protobench.protocols.mqtt.payload`) and ``foreign`` (unstamped
payloads), plus ``expected`` (what it should have received: ``received -
duplicated + lost + undelivered``) and, from the publishers' end markers,
``undelivered`` (messages after the last one received that never came by the
end of the drain). A subscriber is settled (the drain may end) once every
publisher it heard has ended, or nothing came for :data:`QUIET` seconds; at the
end it counts ``unfinished`` publishers whose end never came (their tail is
unknown). Publishers also copy their end marker beside the data, so that a
subscriber behind a backlog still learns what it owes (:mod:`.endboard`).
The subscriber of index 0 of a group also watches the broker's
``$SYS`` dropped total (``broker_dropped``, see :mod:`.brokerstats`). Filters
with ``$share/`` receive a share of each publisher's sequence, so only
``received`` is counted for them.

Messages that reach a subscriber before its run starts (a publisher in another
process may start a few milliseconds sooner) are kept and counted when it does.

Every transport connection opened is counted as ``connects`` (sessions sharing
a connection count it once).

Under the kernel's clock (see :mod:`.client`) a session's own connections read the
kernel's stamps: a QoS 1/2 publish is timed from its write's send stamp to the
receive stamp of its acknowledgement, a subscriber's message from its payload's
send time to its packet's receive stamp (the generator's delay from that stamp to
the subscriber taking it up is recorded apart). A ``connect`` exchange is timed by
the engine (its connection is the exchange), and protobench's own connections (the
end board, the ``$SYS`` watch) stay on the loop's transports.

``connect`` (:class:`ConnectSession`) opens a new connection per exchange and
closes it with DISCONNECT once CONNACK arrived; ``idle`` (:class:`IdleSession`)
holds one connection with keepalive pings. Stream sessions count
``disconnects`` and end with the connection's error, which the engine records
before it reopens the session.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable
from typing import Final, cast

from protobench.protocols.base import (
    AsyncSession,
    CallbackSession,
    Done,
    SessionContext,
    StreamSession,
)
from protobench.protocols.mqtt.brokerstats import DropWatch, watch_drops
from protobench.protocols.mqtt.client import MqttConnection, monotonic_ns, open_connection
from protobench.protocols.mqtt.codec import (
    V5,
    Connect,
    Prop,
    Properties,
    PropValue,
    Publish,
    Will,
    encode,
    encode_properties,
    publish_prefix,
    reason_text,
)
from protobench.protocols.mqtt.endboard import EndBoard, topic_matches
from protobench.protocols.mqtt.ids import client_id as make_client_id
from protobench.protocols.mqtt.options import (
    Endpoint,
    MqttOptions,
    PublishParams,
    SubscribeParams,
    endpoint,
)
from protobench.protocols.mqtt.payload import (
    HEADER,
    HEADER_SIZE,
    MAGIC,
    SENT_AT,
    WILL,
    SequenceTracker,
    SizeMix,
    end_marker,
    new_publisher_id,
    stamp_struct,
    will_marker,
)
from protobench.protocols.sharing import ConnectionShare
from protobench.protocols.sourceaddr import source_for
from protobench.vocab.counters import CONNECTS
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Recorder

BURST: Final = 128
"""QoS 0 completions handed out per session and event-loop turn."""
QUIET: Final = 0.5
"""Seconds without a message after which a subscriber expects nothing more."""

type _Sinks = tuple[Callable[[int], None], Counter[str], Callable[[int], None]]
"""A running subscriber's recorder sinks: latencies, counters, bytes received."""


def client_id(options: MqttOptions, ctx: SessionContext, group: str | None = None) -> str:
    return make_client_id(options.client_id_prefix, group or ctx.group, ctx.index)


def connect_packet(
    options: MqttOptions, cid: str, where: Endpoint | None = None, index: int | None = None
) -> Connect:
    """The CONNECT of ``cid``: credentials from the options, else from the target URL; the
    options' will for session ``index``'s own connections (none for ``index=None``); an
    MQTT 5 one asks for no packet over ``max_packet_size`` (Maximum Packet Size).

    A password needs a user name (MQTT-3.1.2-22 in 3.1.1): with a password and
    no user name anywhere, the user name is empty.
    """
    username = options.username
    password = options.password
    if where is not None:
        username = username if username is not None else where.username
        password = password if password is not None else where.password
    if password is not None and username is None:
        username = ""
    props: tuple[tuple[int, int], ...] = ()
    if options.protocol_level == V5:
        if options.session_expiry:
            props = ((Prop.SESSION_EXPIRY_INTERVAL, int(options.session_expiry)),)
        props += ((Prop.MAXIMUM_PACKET_SIZE, options.max_packet_size),)
    return Connect(
        cid,
        keepalive=int(options.keepalive),
        clean=options.clean_session,
        username=username,
        password=password.encode() if password is not None else None,
        properties=props,
        will=will_of(options, index) if index is not None else None,
    )


def will_of(options: MqttOptions, index: int) -> Will | None:
    """The will of session ``index``'s connection: the options' topic and payload (a
    :func:`~.payload.will_marker` when none is given), QoS, retain and MQTT 5 properties."""
    if options.will_topic is None:
        return None
    props: list[tuple[int, PropValue]] = []
    if options.will_delay:
        props.append((Prop.WILL_DELAY_INTERVAL, int(options.will_delay)))
    if options.will_expiry is not None:
        props.append((Prop.MESSAGE_EXPIRY_INTERVAL, int(options.will_expiry)))
    if options.will_content_type is not None:
        props.append((Prop.CONTENT_TYPE, options.will_content_type))
    props += [(Prop.USER_PROPERTY, pair) for pair in options.will_user_properties.items()]
    payload = (
        will_marker(index, monotonic_ns())
        if options.will_payload is None
        else options.will_payload.encode()
    )
    return Will(
        options.will_topic.format(client=index),
        payload,
        options.will_qos,
        options.will_retain,
        tuple(props),
    )


async def dial(ctx: SessionContext, cid: str, will: bool = True) -> MqttConnection:
    """Open a connection for ``ctx`` with keepalive running (first pings spread out); with
    the options' will and the run's clock unless ``will`` is false (protobench's own
    connections: the end board, the $SYS watch)."""
    options = cast(MqttOptions, ctx.options)
    where = endpoint(ctx.target, options)
    conn = await open_connection(
        where.host,
        where.port,
        connect_packet(options, cid, where, ctx.index if will else None),
        version=options.protocol_level,
        within=ctx.timeout,
        ssl_context=where.ssl_context,
        source=source_for(options.source_addresses, ctx.index, where.host),
        websocket=where.websocket,
        index=ctx.index,
        max_packet=options.max_packet_size,
        reactor=ctx.reactor if will else None,
    )
    ctx.count(CONNECTS, 1)
    conn.start_keepalive(options.keepalive)
    return conn


def clock_of(ctx: SessionContext, conn: MqttConnection) -> None:
    """The session reads the kernel's stamps as its connection does (the report's ``clock``)."""
    ctx.stamps.kernel_receive = conn.stamps.kernel_receive
    ctx.stamps.kernel_send = conn.stamps.kernel_send


# --------------------------------------------------------------------------- publish


def publish_properties(params: PublishParams) -> Properties | None:
    """The MQTT 5 properties of every PUBLISH of ``params`` (``None`` when it sets none and
    uses no topic alias: the plain path)."""
    if not params.v5_properties:
        return None
    props: list[tuple[int, PropValue]] = []
    if params.message_expiry is not None:
        props.append((Prop.MESSAGE_EXPIRY_INTERVAL, int(params.message_expiry)))
    if params.content_type is not None:
        props.append((Prop.CONTENT_TYPE, params.content_type))
    props += [(Prop.USER_PROPERTY, pair) for pair in params.user_properties.items()]
    return tuple(props)


class PublishSession(CallbackSession):
    """One publisher: its own id and sequence, on a possibly shared connection."""

    __slots__ = (
        "_count",
        "_draining",
        "_extra",
        "_loop",
        "_pack",
        "_queued",
        "_ready",
        "_release",
        "_scheduled",
        "_sent_at",
        "_stall_timer",
        "_stopping",
        "_templates",
        "_templates_v5",
        "board",
        "conn",
        "fixed_topic",
        "index",
        "mix",
        "params",
        "publisher",
        "qos",
        "seq",
        "size",
        "stamps",
        "timeout",
        "v5",
    )

    def __init__(
        self,
        conn: MqttConnection,
        release: Callable[[], None],
        ctx: SessionContext,
        params: PublishParams,
        board: EndBoard | None = None,
    ) -> None:
        self.conn = conn
        conn.sent = ctx.sent
        self.stamps = ctx.stamps
        self.board = board
        self._release = release
        self._loop = asyncio.get_running_loop()
        self.params = params
        self.qos = params.qos
        self.timeout = ctx.timeout
        self.index = ctx.index
        self.v5 = conn.version == V5
        self.publisher = new_publisher_id()
        self.seq = 0
        self.size = params.size
        self.mix = SizeMix(params.sizes, seed=ctx.index) if params.sizes else None
        self.fixed_topic = (
            None if "{seq}" in params.topic else params.topic.format(client=ctx.index, seq=0)
        )
        self._templates: dict[int, tuple[bytearray, int]] = {}
        self._pack = stamp_struct(("H" if self.qos else "") + ("x" if self.v5 else "")).pack_into
        self._sent_at = (2 if self.qos else 0) + (1 if self.v5 else 0) + SENT_AT
        """Where the payload's send time is, from where ``_pack`` starts."""
        self._extra = publish_properties(params) if self.v5 else None
        """The MQTT 5 properties of every PUBLISH (``None``: none, and no topic alias)."""
        self._templates_v5: dict[tuple[str, int, int], tuple[bytearray, int, int]] = {}
        self._count = ctx.count
        self._ready: deque[Done] = deque()
        self._scheduled = False
        self._draining = False
        self._stall_timer: asyncio.TimerHandle | None = None
        self._queued = 0
        self._stopping = False

    def _template(self, topic: str, size: int) -> tuple[bytearray, int]:
        """A PUBLISH of ``size`` payload bytes to ``topic`` with zeros where the packet
        identifier, the MQTT 5 property block and the stamp go, and their offset."""
        after = (2 if self.qos else 0) + (1 if self.v5 else 0)
        remaining = 2 + len(topic.encode()) + after + size
        prefix = publish_prefix(topic, self.qos, self.params.retain, False, remaining)
        return bytearray(prefix) + bytes(after + size), len(prefix)

    def _frame(self, pid: int) -> tuple[bytearray, int]:
        """The next message's PUBLISH and where its payload's send time is in it."""
        if self._extra is not None:
            return self._frame_with_properties(pid)
        seq = self.seq
        self.seq = seq + 1
        size = self.size if self.mix is None else self.mix.size_for(seq)
        if self.fixed_topic is None:
            frame, at = self._template(self.params.topic.format(client=self.index, seq=seq), size)
        else:
            cached = self._templates.get(size)
            if cached is None:
                cached = self._templates[size] = self._template(self.fixed_topic, size)
            frame, at = cached
        if self.qos:
            self._pack(frame, at, pid, MAGIC, 0, self.publisher, seq & 0xFFFFFFFF, monotonic_ns())
        else:
            self._pack(frame, at, MAGIC, 0, self.publisher, seq & 0xFFFFFFFF, monotonic_ns())
        return bytearray(frame), at + self._sent_at

    # MQTT 5 PUBLISH properties and topic aliases: a path of its own, the plain one untouched

    def _frame_with_properties(self, pid: int) -> tuple[bytearray, int]:
        """A PUBLISH carrying the params' MQTT 5 properties and, with ``topic_alias``, the
        topic's alias on this connection: the topic's first message names the topic and
        sets the alias, the next ones send an empty topic name and the alias alone."""
        seq = self.seq
        self.seq = seq + 1
        size = self.size if self.mix is None else self.mix.size_for(seq)
        topic = self.fixed_topic or self.params.topic.format(client=self.index, seq=seq)
        wire_topic, alias = topic, 0
        if self.params.topic_alias:
            wire_topic, alias = self._alias(topic)
        key = (wire_topic, size, alias)
        cached = self._templates_v5.get(key) if self.fixed_topic is not None else None
        if cached is None:
            cached = self._template_v5(wire_topic, size, alias)
            if self.fixed_topic is not None:
                self._templates_v5[key] = cached
        frame, at, stamp_at = cached
        if self.qos:
            frame[at] = pid >> 8
            frame[at + 1] = pid & 0xFF
        HEADER.pack_into(
            frame, stamp_at, MAGIC, 0, self.publisher, seq & 0xFFFFFFFF, monotonic_ns()
        )
        return bytearray(frame), stamp_at + SENT_AT

    def _alias(self, topic: str) -> tuple[str, int]:
        """(the topic name to send, the alias or 0): a new alias while the broker's Topic
        Alias Maximum allows one (counted as ``topic_aliases``), else the topic by name."""
        conn = self.conn
        aliases = conn.aliases
        if aliases is None:
            aliases = conn.aliases = {}
        alias = aliases.get(topic)
        if alias is not None:
            return "", alias
        if len(aliases) >= conn.alias_max:
            return topic, 0
        alias = aliases[topic] = len(aliases) + 1
        self._count("topic_aliases", 1)
        return topic, alias

    def _template_v5(self, topic: str, size: int, alias: int) -> tuple[bytearray, int, int]:
        """A PUBLISH template with the property block; (frame, packet id offset, stamp offset)."""
        extra = self._extra or ()
        block = encode_properties(extra + (((Prop.TOPIC_ALIAS, alias),) if alias else ()))
        after = (2 if self.qos else 0) + len(block)
        remaining = 2 + len(topic.encode()) + after + size
        prefix = publish_prefix(topic, self.qos, self.params.retain, False, remaining)
        at = len(prefix)
        frame = bytearray(prefix) + bytes(after + size)
        frame[at + after - len(block) : at + after] = block
        return frame, at, at + after

    def submit(self, done: Done) -> None:
        conn = self.conn
        if conn.error is not None:
            self._loop.call_soon(done, conn.error, 0)
        elif self.qos == 0:
            conn.send_message(*self._frame(0), self.stamps)
            self._ready.append(done)
            if not self._draining and not self._scheduled:
                self._scheduled = True
                self._loop.call_soon(self._drain)
        elif conn.paused or conn.waiting or len(conn.inflight) >= conn.send_quota:
            self._queued += 1
            conn.wait_window(lambda: self._send_queued(done))
        else:
            self._send_tracked(done)

    def _send_queued(self, done: Done) -> None:
        self._queued -= 1
        self._send_tracked(done)
        if self._stopping and not self._queued:
            self._send_end()

    def _send_tracked(self, done: Done) -> None:
        conn = self.conn
        if conn.error is not None:
            done(conn.error, 0)
            return
        try:
            pid = conn.track(done, self.timeout, self.stamps)
        except OpError as exc:
            done(exc, 0)
            return
        conn.send_message(*self._frame(pid), self.stamps)

    def stopping(self) -> None:
        """Send the end marker, after this publisher's messages still waiting for the window."""
        self._stopping = True
        if not self._queued:
            self._send_end()

    def _send_end(self) -> None:
        """The end marker: same topic and QoS, so it follows this publisher's messages."""
        conn = self.conn
        if conn.error is not None:
            return
        topic = self.fixed_topic or self.params.topic.format(client=self.index, seq=self.seq)
        payload = end_marker(self.publisher, self.seq, monotonic_ns())
        if self.board is not None:
            self.board.announce(self.publisher, payload, topic, self.timeout)
        try:
            pid = conn.track(_ignore, self.timeout) if self.qos else 0
        except OpError:
            return
        conn.send(encode(Publish(topic, payload, self.qos, packet_id=pid), conn.version))

    def _drain(self) -> None:
        """Complete queued QoS 0 publishes (their re-submissions join the same burst)."""
        self._scheduled = False
        conn = self.conn
        ready = self._ready
        if conn.error is not None:
            while ready:
                ready.popleft()(conn.error, 0)
            return
        if conn.paused:
            self._scheduled = True
            conn.wait_writable(self._resumed)
            self._stall_timer = self._loop.call_later(self.timeout, self._stalled)
            return
        self._draining = True
        try:
            budget = BURST
            while ready and budget and not conn.paused:
                budget -= 1
                ready.popleft()(None, 0)
        finally:
            self._draining = False
        if ready and not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._drain)

    def _resumed(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        self._scheduled = False
        self._drain()

    def _stalled(self) -> None:
        """The socket stayed full for the whole timeout: fail the held QoS 0 publishes."""
        self._stall_timer = None
        ready, self._ready = self._ready, deque()
        error = OpError(
            ErrorClass.TIMEOUT,
            f"send buffer full for {self.timeout:g}s: the broker is not reading "
            "(stalled, or busy with subscribers behind: see undelivered)",
        )
        for done in ready:
            done(error, 0)

    async def close(self) -> None:
        release, self._release = self._release, _nothing
        release()


def _nothing() -> None:
    return None


def _no_delay(delay_ns: int) -> None:
    return None


def _ignore(error: OpError | None, nbytes: int) -> None:
    return None


# --------------------------------------------------------------------------- streams


class _HeldConnection(StreamSession):
    """A stream session that lives as long as its connection."""

    def __init__(self, conn: MqttConnection) -> None:
        self.conn = conn

    async def _hold(self, recorder: Recorder) -> None:
        error = await self.conn.closed
        recorder.count("disconnects")
        raise error

    async def close(self) -> None:
        self.conn.disconnect()


class SubscribeSession(_HeldConnection):
    """A subscriber measuring end-to-end latency and per-publisher sequence health."""

    def __init__(
        self,
        conn: MqttConnection,
        shared: bool,
        drops: DropWatch | None = None,
        board: EndBoard | None = None,
        filters: tuple[str, ...] = (),
    ) -> None:
        super().__init__(conn)
        self.tracker: SequenceTracker | None = None if shared else SequenceTracker()
        self.drops = drops
        self.board = board
        self.filters = filters
        self._sinks: _Sinks | None = None
        self._delays: Callable[[int], None] = _no_delay
        self._early: list[tuple[bytes, list[int], int]] | None = []
        self._last_message = monotonic_ns()
        self._newest_sent = 0
        """The send stamp of the last message received, or the run's start before one came:
        how far behind the subscriber is, at the end."""
        conn.on_messages = self._messages

    async def run(self, recorder: Recorder) -> None:
        self._sinks = (recorder.latency_sink(), recorder.counter_sink(), recorder.add_bytes_in)
        self._delays = recorder.delay_sink()
        if self.drops is not None:
            self.drops.recorder = recorder
        # Messages that came before the run reached this session (a publisher in another
        # process may start a few milliseconds sooner) are counted now, not dropped.
        early, self._early = self._early or [], None
        for data, spans, now in early:
            self._messages(data, spans, now)
        if not self._newest_sent:  # nothing received yet: behind since the run started
            self._newest_sent = monotonic_ns()
        try:
            await self._hold(recorder)
        finally:
            self._tally_ends(recorder)
            self._sinks = None
            if self.drops is not None:
                self.drops.recorder = None
                if self.drops.last is not None:
                    recorder.count("broker_dropped", 0)  # the broker told: shown even when 0

    def _tally_ends(self, recorder: Recorder) -> None:
        """At the end: the board's publishers matching our filters whose end marker did not
        come in line owe their tail (``undelivered``); the rest are ``unfinished``. A
        subscriber that owes messages counts itself ``lagging`` and how far behind it
        was, ``lag_ms``: the age of the newest message it had received."""
        tracker = self.tracker
        if tracker is None:
            return
        counters = recorder.counter_sink()
        owed = counters["undelivered"]
        if self.board is not None:
            for publisher, (count, topic) in self.board.ends.items():
                if publisher not in tracker.ended and any(
                    topic_matches(f, topic) for f in self.filters
                ):
                    counters["expected"] += tracker.end(publisher, count, counters)
        if tracker.unfinished:
            recorder.count("unfinished", tracker.unfinished)
        if counters["undelivered"] > owed and self._newest_sent:
            recorder.count("lagging", 1)
            recorder.count("lag_ms", max(0, (monotonic_ns() - self._newest_sent) // 1_000_000))

    def settled(self) -> bool:
        """Every publisher heard has ended or was received up to its final count (as the
        board tells), or nothing came for :data:`QUIET` seconds."""
        tracker = self.tracker
        if tracker is not None and tracker.expected:
            ends = self.board.ends if self.board is not None else {}
            ended = tracker.ended
            for publisher, upto in tracker.expected.items():
                if publisher not in ended:
                    final = ends.get(publisher)
                    if final is None or upto < final[0]:
                        break
            else:
                return True
        return monotonic_ns() - self._last_message >= QUIET * 1e9

    async def close(self) -> None:
        if self.drops is not None:
            self.drops.close()
        await super().close()

    def _messages(self, data: bytes, spans: list[int], now: int) -> None:
        """The messages of one read (counters are added once per read, not per message)."""
        sinks = self._sinks
        if sinks is None:
            if self._early is not None:
                self._early.append((data, spans, now))
            return
        append, counters, add_bytes_in = sinks
        unpack = HEADER.unpack_from
        tracker = self.tracker
        expected = tracker.expected if tracker is not None else {}
        received = foreign = size = advanced = wills = 0
        i = 0
        n = len(spans)
        self._last_message = now
        while i < n:
            start = spans[i]
            end = spans[i + 1]
            i += 2
            if end - start < HEADER_SIZE:
                foreign += 1
                continue
            magic, flags, publisher, seq, sent = unpack(data, start)
            if magic != MAGIC:
                foreign += 1
                continue
            if flags:
                if flags == WILL:  # an exchange: its latency from the connection's CONNECT
                    append(now - sent)
                    wills += 1
                elif tracker is not None:
                    advanced += tracker.end(publisher, seq, counters)
                continue
            append(now - sent)
            size += end - start
            received += 1
            if tracker is not None:
                if expected.get(publisher) == seq:
                    expected[publisher] = seq + 1
                    advanced += 1
                else:
                    advanced += tracker.observe(publisher, seq, counters)
        if received:
            self._newest_sent = sent
            counters["received"] += received
            add_bytes_in(size)
            if now == self.conn.stamps.received:  # timed by the kernel: our delay, apart
                delay = monotonic_ns() - now
                delays = self._delays
                for _ in range(received):
                    delays(delay)
        if advanced:
            counters["expected"] += advanced
        if foreign:
            counters["foreign"] += foreign
        if wills:
            counters["wills"] += wills


class IdleSession(_HeldConnection):
    """An open connection kept alive by keepalive pings; records nothing."""

    async def run(self, recorder: Recorder) -> None:
        error = await self.conn.closed  # not through _hold: one coroutine less per connection
        recorder.count("disconnects")
        raise error


class ConnectSession(AsyncSession):
    """One exchange = a new connection up to CONNACK; then DISCONNECT is sent without
    waiting or, with ``drop``, the connection is dropped without DISCONNECT (the broker
    must publish its will)."""

    def __init__(self, ctx: SessionContext, drop: bool = False) -> None:
        self.ctx = ctx
        self.drop = drop
        self.cid = client_id(cast(MqttOptions, ctx.options), ctx)

    async def call(self) -> int:
        options = cast(MqttOptions, self.ctx.options)
        where = endpoint(self.ctx.target, options)
        conn = await open_connection(
            where.host,
            where.port,
            connect_packet(options, self.cid, where, self.ctx.index),
            version=options.protocol_level,
            within=self.ctx.timeout,
            ssl_context=where.ssl_context,
            source=source_for(options.source_addresses, self.ctx.index, where.host),
            websocket=where.websocket,
            index=self.ctx.index,
            max_packet=options.max_packet_size,
        )
        self.ctx.count(CONNECTS, 1)
        if self.drop:
            conn.abort(OpError(ErrorClass.CLOSED, "dropped by the client (no DISCONNECT)"))
        else:
            conn.disconnect()
        return 4

    async def close(self) -> None:
        return None


# --------------------------------------------------------------------------- opening


async def _board(ctx: SessionContext, options: MqttOptions) -> EndBoard | None:
    """This process's end board (opened by its first publisher or subscriber)."""
    return await EndBoard.of(
        ctx.target,
        lambda: dial(ctx, client_id(options, ctx, f"{ctx.group}$end"), will=False),
        ctx.timeout,
    )


def _alive(conn: MqttConnection) -> bool:
    return conn.error is None


def _releaser(conn: MqttConnection, last: Callable[[], bool]) -> Callable[[], None]:
    def release() -> None:
        if last():
            conn.disconnect()

    return release


async def open_session(ctx: SessionContext) -> CallbackSession | AsyncSession | StreamSession:
    """Open the session of ``ctx.op`` (the params were validated by the engine)."""
    options = cast(MqttOptions, ctx.options)
    endpoint(ctx.target, options)
    if ctx.op == "publish":
        params = cast(PublishParams, ctx.params)
        if params.v5_properties and options.protocol_level != V5:
            raise OpError(
                ErrorClass.VALIDATION,
                f"{', '.join(params.v5_properties)}: MQTT 5 PUBLISH properties need "
                '--opt version=5 (version = "5" in [options])',
            )
        if params.inflight > 1:
            share = ConnectionShare[MqttConnection].of(
                ("mqtt", ctx.target, ctx.group), params.inflight, _alive
            )
            conn, last = await share.acquire(lambda: dial(ctx, client_id(options, ctx)))
            release = _releaser(conn, last)
        else:
            conn = await dial(ctx, client_id(options, ctx))
            release = conn.disconnect
        clock_of(ctx, conn)
        return PublishSession(conn, release, ctx, params, await _board(ctx, options))
    if ctx.op == "subscribe":
        sub = cast(SubscribeParams, ctx.params)
        conn = await dial(ctx, client_id(options, ctx))
        try:
            suback = await conn.subscribe([(t, sub.qos) for t in sub.topics], within=ctx.timeout)
        except OpError:
            conn.abort(OpError(ErrorClass.CLOSED, "subscribe failed"))
            raise
        refused = [code for code in suback.reasons if code >= 0x80]
        if refused:
            conn.disconnect()
            raise OpError(
                ErrorClass.PROTOCOL,
                f"SUBACK refused: {reason_text(refused[0], conn.version)}",
                code=f"0x{refused[0]:02x}",
            )
        drops = None
        if ctx.index == 0:
            drops = await watch_drops(
                await dial(ctx, client_id(options, ctx, f"{ctx.group}$SYS"), will=False),
                ctx.timeout,
            )
        shared = any(t.startswith("$share/") for t in sub.topics)
        conn.sent = ctx.sent
        clock_of(ctx, conn)
        return SubscribeSession(conn, shared, drops, await _board(ctx, options), tuple(sub.topics))
    if ctx.op == "idle":
        conn = await dial(ctx, client_id(options, ctx))
        conn.sent = ctx.sent
        clock_of(ctx, conn)
        return IdleSession(conn)
    if ctx.op in ("connect", "drop"):
        return ConnectSession(ctx, drop=ctx.op == "drop")
    raise OpError(ErrorClass.VALIDATION, f"unknown MQTT operation {ctx.op!r}")
