"""The sessions of the ``websocket`` operations: echo, send, subscribe.

``echo`` (:class:`EchoSession`, a callback session) sends payload ``seq`` of
its :class:`~protobench.protocols.payloads.TaggedPayloads` and completes when
the same bytes, of the same message type, come back; anything else is a
``validation`` error. A reply that arrives after its exchange timed out is
recognised by its tag and dropped. Latency is the round trip: from the send of
the message's frame to the receive of the packet that completed its echo (the
kernel's stamps on a ``ws://`` connection under the kernel's clock, see
:mod:`.client`; else the engine's time just before the send and at the echo).

``send`` (:class:`SendSession`) writes tagged messages at ``rate`` per session
(as fast as the socket accepts when unset) and records no latency: it counts
``sent`` messages (their payload bytes are the op's bytes out), and when the
server echoes, ``echoed`` replies verified against their tags.

``subscribe`` (:class:`SubscribeSession`) counts ``received`` messages; with
``stamped`` pushes (the embedded target's ``/push``: sequence and send time as
``>QQ``) it records the one-way delay as latency (sender and receiver share
the host's wall clock: the push's receive time is the kernel's stamp of its
packet where the connection reads them, then the generator's delay is recorded
apart, else the time it is taken up) and counts ``lost`` and ``reordered`` messages.

A stream session that loses its connection raises the :class:`OpError` from
``run``. An echo session whose connection is lost fails the exchange in flight
with the error (it is :attr:`~protobench.vocab.errors.OpError.lost`: the engine
reopens the session on a new connection), or, with none in flight, the next one:
one error per failed exchange.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import deque
from collections.abc import Callable

from protobench.protocols.base import CallbackSession, Done, StreamSession
from protobench.protocols.payloads import TaggedPayloads
from protobench.protocols.timestamps.clock import WALL, Stamps, perf_ns
from protobench.protocols.timestamps.send import request_writer
from protobench.protocols.websocket.client import WsConnection
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Recorder, Tally

PUSH_HEADER = struct.Struct(">QQ")
_EXPIRED_KEEP = 64
_BURST = 64


def _watch_period(timeout: float) -> float:
    return max(0.005, min(0.1, timeout / 10))


class EchoSession(CallbackSession):
    """One connection, one tagged message in flight, every reply verified."""

    __slots__ = (
        "_done",
        "_encode",
        "_error",
        "_expected",
        "_expired",
        "_handle",
        "_loop",
        "_payloads",
        "_sent",
        "_sent_at",
        "_seq",
        "_stamps",
        "_text",
        "_timeout",
        "_write_request",
        "conn",
    )

    def __init__(
        self,
        conn: WsConnection,
        payloads: TaggedPayloads,
        timeout: float,
        sent: Tally,
        stamps: Stamps | None = None,
    ) -> None:
        self.conn = conn
        self._sent = sent
        self._stamps = stamps if stamps is not None else Stamps()
        self._payloads = payloads
        self._text = payloads.mode == "text"
        self._timeout = timeout
        self._seq = 0
        self._done: Done | None = None
        self._expected = b""
        self._sent_at = 0.0
        self._error: OpError | None = None
        self._expired: deque[int] = deque(maxlen=_EXPIRED_KEEP)
        self._loop = asyncio.get_running_loop()
        assert conn.codec is not None
        assert conn.transport is not None
        self._encode = conn.codec.encode
        self._write_request = request_writer(conn.transport, self._stamps)
        conn.set_on_message(self._on_message)
        conn.on_lost = self._on_lost
        self._handle = self._loop.call_later(_watch_period(timeout), self._watch)
        if conn.lost is not None:  # lost before this session took it over
            self._on_lost(conn.lost)

    def submit(self, done: Done) -> None:
        if self._error is not None:
            self._loop.call_soon(done, self._error, 0)
            return
        self._seq = seq = self._seq + 1
        payload = self._payloads.build(seq)
        self._expected = payload
        self._done = done
        self._sent_at = self._loop.time()
        self._write_request(self._encode(payload, self._text))
        self._sent.n += len(payload)

    def _on_message(self, text: bool, data: bytes) -> None:
        done = self._done
        if done is None:
            return
        if data == self._expected and text is self._text:
            self._done = None
            done(None, len(data))
            return
        tag = self._payloads.read_tag(data)
        if tag is not None and tag[0] == self._payloads.source and tag[1] in self._expired:
            self._expired.remove(tag[1])
            return
        self._done = None
        kind = "text" if text else "binary"
        done(
            OpError(
                ErrorClass.VALIDATION,
                f"echo of message {self._seq} differs from what was sent ({kind}, {len(data)} B)",
            ),
            len(data),
        )

    def _watch(self) -> None:
        done = self._done
        if done is not None and self._loop.time() - self._sent_at > self._timeout:
            self._done = None
            self._expired.append(self._seq)
            done(OpError(ErrorClass.TIMEOUT, f"no echo within {self._timeout:g}s"), 0)
        if self._error is None:
            self._handle = self._loop.call_later(_watch_period(self._timeout), self._watch)

    def _on_lost(self, error: OpError) -> None:
        self._error = error
        self._handle.cancel()
        done, self._done = self._done, None
        if done is not None:
            done(error, 0)

    async def close(self) -> None:
        self._handle.cancel()
        self.conn.close()


class SendSession(StreamSession):
    """Fire-and-forget tagged messages; counts what was sent and what came back."""

    def __init__(self, conn: WsConnection, payloads: TaggedPayloads, rate: float | None) -> None:
        self.conn = conn
        self._payloads = payloads
        self._text = payloads.mode == "text"
        self._rate = rate
        self._seq = 0
        self._recorder: Recorder | None = None
        conn.set_on_message(self._on_message)

    async def run(self, recorder: Recorder) -> None:
        self._recorder = recorder
        loop = asyncio.get_running_loop()
        start = loop.time()
        sent = 0
        while self.conn.lost is None:
            if self.conn.paused:
                await self.conn.writable()
                continue
            if self._rate is None:
                sent += self._burst(_BURST, recorder)
                await asyncio.sleep(0)
            else:
                due = int((loop.time() - start) * self._rate) - sent
                sent += self._burst(min(due, _BURST * 16), recorder)
                await asyncio.sleep(max(0.001, start + (sent + 1) / self._rate - loop.time()))
        raise self.conn.lost

    def _burst(self, due: int, recorder: Recorder) -> int:
        """Send up to ``due`` messages while the socket accepts them; return how many."""
        conn = self.conn
        count = nbytes = 0
        while count < due and not conn.paused and conn.lost is None:
            self._seq += 1
            payload = self._payloads.build(self._seq)
            conn.send(payload, self._text)
            count += 1
            nbytes += len(payload)
        recorder.count("sent", count)
        recorder.add_bytes_out(nbytes)
        return count

    def _on_message(self, text: bool, data: bytes) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        tag = self._payloads.read_tag(data)
        recorder.add_bytes_in(len(data))
        if (
            tag is not None
            and tag[0] == self._payloads.source
            and text is self._text
            and self._payloads.matches(data, tag[1])
        ):
            recorder.count("echoed")
        else:
            recorder.error(
                OpError(ErrorClass.VALIDATION, f"reply of {len(data)} B matches no sent message")
            )

    async def close(self) -> None:
        self.conn.close()


class SubscribeSession(StreamSession):
    """Counts the server's pushes; stamped pushes also give delay and losses."""

    def __init__(
        self,
        conn: WsConnection,
        message: str | None,
        stamped: bool,
        stamps: Stamps | None = None,
    ) -> None:
        self.conn = conn
        self._message = message
        self._stamped = stamped
        self._stamps = stamps if stamps is not None else Stamps()
        """The connection's (the kernel's receive stamp of each read, when it has them)."""
        self._last_seq: int | None = None
        self._recorder: Recorder | None = None
        self._delays: Callable[[int], None] | None = None
        self._lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        conn.set_on_message(self._on_message)
        conn.on_lost = self._on_lost
        if conn.lost is not None:  # lost before this session took it over
            self._on_lost(conn.lost)

    async def run(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._delays = recorder.delay_sink()
        if self._message is not None:
            message = self._message.encode()
            self.conn.send(message, True)
            recorder.add_bytes_out(len(message))
        await self._lost
        raise self.conn.lost or OpError(ErrorClass.CLOSED, "connection closed")

    def _on_message(self, text: bool, data: bytes) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        recorder.add_bytes_in(len(data))
        recorder.count("received")
        if not self._stamped:
            return
        if len(data) < PUSH_HEADER.size:
            recorder.error(OpError(ErrorClass.VALIDATION, f"push of {len(data)} B has no stamp"))
            return
        seq, sent_ns = PUSH_HEADER.unpack_from(data)
        received = self._stamps.received
        if received:  # the kernel's stamp (the engine's clock), back on the wall clock
            recorder.record(max(0, received + WALL.offset - sent_ns))
            self._delays(perf_ns() - received)  # type: ignore[misc]
        else:
            recorder.record(max(0, time.time_ns() - sent_ns))
        last = self._last_seq
        if last is not None:
            if seq > last + 1:
                recorder.count("lost", seq - last - 1)
            elif seq <= last:
                recorder.count("reordered")
                return
        self._last_seq = seq

    def _on_lost(self, error: OpError) -> None:
        if not self._lost.done():
            self._lost.set_result(None)

    async def close(self) -> None:
        self.conn.close()
