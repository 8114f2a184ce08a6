"""Keepalive for many connections on one timer: a wheel of buckets visited in turn.

Every connection with a keepalive must act once per period (half the
keepalive): ping if it sent nothing since its last turn, give up if its last
ping got no PINGRESP. A timer handle per connection costs about 0.5 KB and a
wake-up each; here the connections of one period share a :class:`Wheel` per
event loop: :data:`SLOTS` buckets, one visited every ``period / SLOTS``
seconds, so each connection's turn comes once per period (its first turn at
a random point of the first period, which spreads the pings of a connection
storm). A connection leaves its bucket at its first turn after it ended.
"""

from __future__ import annotations

import asyncio
import random
from typing import Final, Protocol

SLOTS: Final = 20


class Ticking(Protocol):
    def keepalive_tick(self) -> bool:
        """The connection's turn; False once it no longer needs turns."""
        ...


class Wheel:
    """The connections of one keepalive period on one event loop (see the module docstring)."""

    __slots__ = ("buckets", "handle", "loop", "period", "position", "size")

    def __init__(self, loop: asyncio.AbstractEventLoop, period: float) -> None:
        self.loop = loop
        self.period = period
        self.buckets: list[list[Ticking]] = [[] for _ in range(SLOTS)]
        self.position = 0
        self.size = 0
        self.handle: asyncio.TimerHandle | None = None

    def add(self, conn: Ticking) -> None:
        self.buckets[random.randrange(SLOTS)].append(conn)
        self.size += 1
        if self.handle is None:
            self.handle = self.loop.call_later(self.period / SLOTS, self._turn)

    def _turn(self) -> None:
        position = self.position
        self.position = (position + 1) % SLOTS
        bucket = self.buckets[position]
        alive = [conn for conn in bucket if conn.keepalive_tick()]
        self.size -= len(bucket) - len(alive)
        self.buckets[position] = alive
        self.handle = self.loop.call_later(self.period / SLOTS, self._turn) if self.size else None


_wheels: dict[float, Wheel] = {}


def wheel(period: float) -> Wheel:
    """The wheel of ``period`` seconds on the running event loop."""
    loop = asyncio.get_running_loop()
    found = _wheels.get(period)
    if found is None or found.loop is not loop:
        found = _wheels[period] = Wheel(loop, period)
    return found
