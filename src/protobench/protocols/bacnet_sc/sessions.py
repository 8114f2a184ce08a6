"""The sessions of the ``bacnet-sc`` operations.

``unicast`` (:class:`UnicastSession`, a callback session): payload ``seq``
goes to a node chosen at random (seeded by the session); the exchange ends
when that node's echo arrives and equals ``prefix + payload`` byte for byte
(anything else with our tag is a ``validation`` error). Latency is the round
trip, measured by the engine around ``submit``/``done``.

``broadcast`` (:class:`BroadcastSession`, an async session): payload ``seq``
goes to every node through the hub; ``call`` returns when ``echoes`` distinct
nodes have echoed it correctly, so the latency the engine records is the round
trip to the last expected echo, never the time to queue the send. Fewer
echoes within the timeout is a ``timeout`` error naming how many came.

NPDUs that do not start with the prefix (other sessions' broadcasts reach
every node) are ignored; a late echo of an exchange that timed out is
recognised by its tag and dropped. With ``inflight`` > 1 the sessions of a
group share a link (one SC connection), which hands each echo to the session
its tag names; a session's close releases the link, the last one closes it.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable

from protobench.protocols.bacnet_sc.client import Link
from protobench.protocols.base import AsyncSession, CallbackSession, Done
from protobench.protocols.payloads import TaggedPayloads
from protobench.protocols.timestamps.clock import Stamps, perf_ns
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally

_EXPIRED_KEEP = 64


def _watch_period(timeout: float) -> float:
    return max(0.005, min(0.1, timeout / 10))


class _Echoes:
    """What both sessions have: the link and its release, payloads, prefix, expired tags."""

    def __init__(
        self, link: Link, release: Callable[[], bool], payloads: TaggedPayloads, timeout: float
    ) -> None:
        self.link = link
        self.release: Callable[[], bool] | None = release
        self.payloads = payloads
        self.prefix = link.prefix
        self.timeout = timeout
        self.seq = 0
        self.expired: deque[int] = deque(maxlen=_EXPIRED_KEEP)

    async def close(self) -> None:
        """Leave the link; the last session on it closes it (idempotent)."""
        release, self.release = self.release, None
        if release is None:
            return
        self.link.detach(self.payloads.source)
        if release():
            await self.link.close()

    def classify(self, npdu: bytes) -> int | None:
        """The sequence number an echo of ours carries; ``None`` for foreign or expired NPDUs."""
        if not npdu.startswith(self.prefix):
            return None
        tag = self.payloads.read_tag(npdu, len(self.prefix))
        if tag is None or tag[0] != self.payloads.source:
            return -1
        if tag[1] in self.expired:
            self.expired.remove(tag[1])
            return None
        return tag[1]


class UnicastSession(CallbackSession):
    """One stress node; one NPDU in flight to a random echo node."""

    def __init__(
        self,
        link: Link,
        release: Callable[[], bool],
        payloads: TaggedPayloads,
        nodes: list[bytes],
        timeout: float,
        sent: Tally,
        stamps: Stamps | None = None,
    ) -> None:
        self._echoes = _Echoes(link, release, payloads, timeout)
        self._sent = sent
        self._stamps = stamps if stamps is not None else Stamps()
        self._nodes = nodes
        self._random = random.Random(payloads.source)
        self._done: Done | None = None
        self._expected = b""
        self._node = b""
        self._sent_at = 0.0
        self._loop = asyncio.get_running_loop()
        link.attach(payloads.source, self)
        self._handle = self._loop.call_later(_watch_period(timeout), self._watch)

    def submit(self, done: Done) -> None:
        link = self._echoes.link
        if not link.connected:
            error = link.dropped or OpError(ErrorClass.CLOSED, "not connected to the hub")
            self._loop.call_soon(done, error, 0)
            return
        echoes = self._echoes
        echoes.seq = seq = echoes.seq + 1
        payload = echoes.payloads.build(seq)
        self._node = node = self._random.choice(self._nodes)
        self._expected = echoes.prefix + payload
        self._done = done
        self._sent_at = self._loop.time()
        self._stamps.sent = perf_ns()  # bac-py frames and writes it in this call
        link.transport.send_unicast(payload, node)
        self._sent.n += len(payload)

    def on_npdu(self, npdu: bytes, source: bytes) -> None:
        done = self._done
        if done is None:
            return
        if npdu == self._expected and source == self._node:
            self._done = None
            done(None, len(npdu))
            return
        seq = self._echoes.classify(npdu)
        if seq is None:
            return
        self._done = None
        done(
            OpError(
                ErrorClass.VALIDATION,
                f"echo of NPDU {self._echoes.seq} from {source.hex(':')} differs from the NPDU",
            ),
            len(npdu),
        )

    def _watch(self) -> None:
        done = self._done
        echoes = self._echoes
        if done is not None and self._loop.time() - self._sent_at > echoes.timeout:
            self._done = None
            echoes.expired.append(echoes.seq)
            done(OpError(ErrorClass.TIMEOUT, f"no echo within {echoes.timeout:g}s"), 0)
        self._handle = self._loop.call_later(_watch_period(echoes.timeout), self._watch)

    def on_drop(self, error: OpError) -> None:
        done, self._done = self._done, None
        if done is not None:
            done(error, 0)

    async def close(self) -> None:
        self._handle.cancel()
        await self._echoes.close()


class BroadcastSession(AsyncSession):
    """One stress node broadcasting; an exchange ends with ``echoes`` verified echoes."""

    def __init__(
        self,
        link: Link,
        release: Callable[[], bool],
        payloads: TaggedPayloads,
        echoes: int,
        timeout: float,
        sent: Tally,
        stamps: Stamps | None = None,
    ) -> None:
        self._echoes = _Echoes(link, release, payloads, timeout)
        self._sent = sent
        self._stamps = stamps if stamps is not None else Stamps()
        self._wanted = echoes
        self._expected = b""
        self._sources: set[bytes] = set()
        self._nbytes = 0
        self._waiter: asyncio.Future[int] | None = None
        link.attach(payloads.source, self)

    async def call(self) -> int:
        echoes = self._echoes
        link = echoes.link
        if not link.connected:
            raise link.dropped or OpError(ErrorClass.CLOSED, "not connected to the hub")
        echoes.seq = seq = echoes.seq + 1
        payload = echoes.payloads.build(seq)
        self._expected = echoes.prefix + payload
        self._sources.clear()
        self._nbytes = 0
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        self._stamps.sent = perf_ns()  # bac-py frames and writes it in this call
        link.transport.send_broadcast(payload)
        self._sent.n += len(payload)
        try:
            async with asyncio.timeout(echoes.timeout):
                return await waiter
        except TimeoutError:
            echoes.expired.append(seq)
            raise OpError(
                ErrorClass.TIMEOUT,
                f"{len(self._sources)} of {self._wanted} echoes within {echoes.timeout:g}s",
            ) from None
        finally:
            self._waiter = None

    def on_npdu(self, npdu: bytes, source: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if npdu == self._expected:
            if source not in self._sources:
                self._sources.add(source)
                self._nbytes += len(npdu)
                if len(self._sources) >= self._wanted:
                    waiter.set_result(self._nbytes)
            return
        seq = self._echoes.classify(npdu)
        if seq is None or (0 <= seq < self._echoes.seq):
            return
        waiter.set_exception(
            OpError(
                ErrorClass.VALIDATION,
                f"echo of broadcast {self._echoes.seq} from {source.hex(':')} is not the NPDU",
            )
        )

    def on_drop(self, error: OpError) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    async def close(self) -> None:
        await self._echoes.close()
