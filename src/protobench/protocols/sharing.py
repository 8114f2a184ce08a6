"""Sessions of one group sharing connections, up to ``per`` sessions on each.

A plugin with an ``inflight`` parameter (MQTT publishers, BACnet/SC echoes)
opens one connection for every ``per`` sessions of a group in a worker: each
session keeps one exchange in flight, so a connection carries ``per``. The
first session of a connection opens it; the others wait for that open (a
cancelled waiter does not cancel it) and fail with its error. A connection
that is no longer ``alive`` gets no new sessions; the release function handed
to each session returns ``True`` for the last one, which closes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar


class _Shared[T]:
    __slots__ = ("future", "members", "refs")

    def __init__(self, future: asyncio.Future[T]) -> None:
        self.future = future
        self.members = 0
        self.refs = 0

    def usable(self, per: int, alive: Callable[[T], bool]) -> bool:
        if self.members >= per:
            return False
        if not self.future.done():
            return True
        return (
            not self.future.cancelled()
            and self.future.exception() is None
            and alive(self.future.result())
        )


class ConnectionShare[T]:
    """The connections of one group (``key``) in one process, see the module."""

    _shares: ClassVar[dict[tuple[str, ...], ConnectionShare[Any]]] = {}

    def __init__(self, per: int, alive: Callable[[T], bool]) -> None:
        self.per = per
        self._alive = alive
        self._filling: _Shared[T] | None = None

    @classmethod
    def of(cls, key: tuple[str, ...], per: int, alive: Callable[[T], bool]) -> ConnectionShare[T]:
        """The share of ``key`` (e.g. protocol, target and group) with ``per`` per connection."""
        share: ConnectionShare[T] | None = cls._shares.get(key)
        if share is None or share.per != per:
            share = cls._shares[key] = cls(per, alive)
        return share

    async def acquire(self, opener: Callable[[], Awaitable[T]]) -> tuple[T, Callable[[], bool]]:
        """A connection with room for one more session, and the function releasing it
        (``True``: that was the last session, close the connection)."""
        shared = self._filling
        if shared is None or not shared.usable(self.per, self._alive):
            shared = self._filling = _Shared(asyncio.ensure_future(opener()))
        shared.members += 1
        try:
            conn = await asyncio.shield(shared.future)
        except BaseException:
            shared.members -= 1
            if self._filling is shared and shared.future.done():
                self._filling = None
            raise
        shared.refs += 1

        def release() -> bool:
            shared.refs -= 1
            return shared.refs == 0

        return conn, release
