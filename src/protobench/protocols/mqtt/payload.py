"""The payload publishers send: a 20-byte stamp, then padding to the chosen size.

The stamp is big-endian ``magic (u16) | flags (u16) | publisher (u32) |
sequence (u32) | send time (i64, CLOCK_MONOTONIC nanoseconds)``. The monotonic
clock (the engine's, :data:`~protobench.protocols.mqtt.client.monotonic_ns`) is
shared by every process of a Linux host, so a subscriber in another worker process
computes the end-to-end latency as ``receive time - send time`` (the send time is
written when the message goes to the socket, immediately before the write), the receive time
being the kernel's stamp of the packet converted to that clock (or, on the user
clock, the time it takes the message up); publisher and subscriber must run on
the same host.

A publisher ends with one *end marker* (:func:`end_marker`): a stamp alone
with the flag :data:`END` whose sequence field is the number of messages the
publisher sent, so that its subscribers know what they should have received.
A connection's will, unless given, is a *will marker* (:func:`will_marker`):
a stamp alone with the flag :data:`WILL`, the session's index as publisher
and the connect time, which subscribers count as ``wills``.

The publisher id is random per publisher session (a reconnected publisher is a
new publisher, its sequence starting at 0 again), the sequence counts that
session's messages from 0. :class:`SequenceTracker` follows every publisher's
sequence on the subscriber side and tells received messages apart as in
order, lost (a gap), late (arrived after a later one: counted out of order and
no longer lost) or duplicated. Payloads without the magic are ``foreign``.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Mapping, MutableMapping
from typing import Final

MAGIC: Final = 0x5042
END: Final = 0x0001
"""The flag of an end marker: the sequence field is the publisher's final count."""
WILL: Final = 0x0002
"""The flag of a will marker: the publisher field is the session index of the connection."""
HEADER: Final = struct.Struct(">HHIIq")
HEADER_SIZE: Final = HEADER.size
SENT_AT: Final = 12
"""Where the send time is in the stamp: a publisher writes it again just before the write."""
SENT: Final = struct.Struct(">q")
MAX_GAPS: Final = 64
"""Gaps remembered per publisher; late arrivals from older, forgotten gaps count as duplicates."""
MIX_SLOTS: Final = 256


def stamp(publisher: int, seq: int, now_ns: int) -> bytes:
    """The 20-byte stamp that starts every payload."""
    return HEADER.pack(MAGIC, 0, publisher, seq & 0xFFFFFFFF, now_ns)


def end_marker(publisher: int, count: int, now_ns: int) -> bytes:
    """The payload announcing that ``publisher`` sent ``count`` messages and no more."""
    return HEADER.pack(MAGIC, END, publisher, count & 0xFFFFFFFF, now_ns)


def will_marker(index: int, now_ns: int) -> bytes:
    """The default will payload of session ``index``'s connection (connected at ``now_ns``)."""
    return HEADER.pack(MAGIC, WILL, index & 0xFFFFFFFF, 0, now_ns)


def stamp_struct(before: str) -> struct.Struct:
    """A big-endian struct of the fields ``before`` (struct format codes), then the stamp's.

    Publishers pack a packet identifier (``H``), the MQTT 5 property block
    (``Ns``, N its length) and the stamp with one ``pack_into``.
    """
    return struct.Struct(">" + before + HEADER.format.lstrip(">"))


def new_publisher_id() -> int:
    """A random 32-bit publisher id (collisions among hundreds of publishers are negligible)."""
    return random.getrandbits(32)


class SizeMix:
    """Payload sizes drawn from weights, as a shuffled table indexed by sequence.

    ``size_for(seq)`` is a table lookup (no random draw per message); over every
    256 consecutive messages the sizes follow the weights to within one slot.
    """

    __slots__ = ("sizes", "table")

    def __init__(self, weights: Mapping[int, float], seed: int = 0) -> None:
        if not weights or any(w <= 0 for w in weights.values()):
            raise ValueError("a size mix needs at least one size with a positive weight")
        total = sum(weights.values())
        exact = {size: MIX_SLOTS * w / total for size, w in weights.items()}
        slots = {size: int(x) for size, x in exact.items()}
        by_remainder = sorted(exact, key=lambda s: exact[s] - slots[s], reverse=True)
        for size in by_remainder[: MIX_SLOTS - sum(slots.values())]:
            slots[size] += 1
        table = [size for size, n in slots.items() for _ in range(n)]
        random.Random(seed).shuffle(table)
        self.table: tuple[int, ...] = tuple(table)
        self.sizes: tuple[int, ...] = tuple(sorted(weights))

    def size_for(self, seq: int) -> int:
        return self.table[seq % MIX_SLOTS]


class SequenceTracker:
    """Per-publisher sequence accounting on the subscriber side.

    :meth:`observe` adds to ``counters``: ``lost`` for every sequence number
    skipped; a skipped one arriving later is ``out_of_order`` and takes one
    back from ``lost``; one already seen is ``duplicated``. The first message
    seen from a publisher starts its count (messages before it are not lost:
    the subscriber was not there). :meth:`end` takes a publisher's end marker:
    the messages after the last one received never came (``undelivered``).

    ``expected`` maps every publisher seen to its next sequence number; a hot
    path may advance it itself for a message in order (one more ``expected``
    message) and call :meth:`observe` for the others, which returns how many
    more messages the subscriber now knows it should have received. So
    ``expected = received - duplicated + lost + undelivered``.
    """

    __slots__ = ("_gaps", "ended", "expected")

    def __init__(self) -> None:
        self.expected: dict[int, int] = {}
        self.ended: set[int] = set()
        self._gaps: dict[int, list[list[int]]] = {}

    @property
    def publishers(self) -> int:
        return len(self.expected)

    def observe(self, publisher: int, seq: int, counters: MutableMapping[str, int]) -> int:
        expected = self.expected.get(publisher)
        if expected == seq or expected is None:
            self.expected[publisher] = seq + 1
            return 1
        if seq > expected:
            counters["lost"] = counters.get("lost", 0) + seq - expected
            gaps = self._gaps.setdefault(publisher, [])
            gaps.append([expected, seq])
            if len(gaps) > MAX_GAPS:
                del gaps[0]
            self.expected[publisher] = seq + 1
            return seq + 1 - expected
        if self._fill(publisher, seq):
            counters["lost"] = counters.get("lost", 0) - 1
            counters["out_of_order"] = counters.get("out_of_order", 0) + 1
        else:
            counters["duplicated"] = counters.get("duplicated", 0) + 1
        return 0

    def end(self, publisher: int, count: int, counters: MutableMapping[str, int]) -> int:
        """``publisher`` sent ``count`` messages: count the tail never received as
        ``undelivered`` (all of them for a publisher never heard); return it."""
        if publisher in self.ended:
            return 0
        self.ended.add(publisher)
        tail = max(0, count - self.expected.get(publisher, 0))
        self.expected[publisher] = max(count, self.expected.get(publisher, 0))
        if tail:
            counters["undelivered"] = counters.get("undelivered", 0) + tail
        return tail

    @property
    def unfinished(self) -> int:
        """Publishers heard whose end marker has not come."""
        return len(self.expected) - len(self.ended)

    def _fill(self, publisher: int, seq: int) -> bool:
        """Remove ``seq`` from the publisher's gaps; False if it was not missing."""
        gaps = self._gaps.get(publisher)
        if not gaps:
            return False
        for index, gap in enumerate(gaps):
            start, end = gap
            if start <= seq < end:
                if start == seq and end == seq + 1:
                    del gaps[index]
                elif start == seq:
                    gap[0] = seq + 1
                elif end == seq + 1:
                    gap[1] = seq
                else:
                    gap[1] = seq
                    gaps.insert(index + 1, [seq + 1, end])
                    if len(gaps) > MAX_GAPS:
                        del gaps[0]
                return True
        return False
