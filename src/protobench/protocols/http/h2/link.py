"""An HTTP/2 connection that ``streams`` sessions of a group share, reopened when it goes.

An :class:`H2Link` holds the group's current
:class:`~protobench.protocols.http.h2.client.H2Connection`; its sessions
submit to it. Requests the connection cannot carry (it went away with GOAWAY,
closed, used up its stream ids) come back to the link, wait while one new
connection opens, and go out on it: those the server dropped unprocessed
(GOAWAY's streams above its last stream id) are sent again once (counted in
``h2_retried``); a failure to reopen is every waiting request's error. (The
opener counts the connections it opens.)

Every ``SAMPLE_SECONDS`` the link adds the streams in flight on its connection
to ``stream_samples`` and one to ``connection_samples``: their ratio over any
window is the streams in flight per connection (the report's
``streams_per_connection``). Requests that waited for the server's
SETTINGS_MAX_CONCURRENT_STREAMS are counted in ``h2_stream_waits``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from protobench.protocols.base import Done
from protobench.protocols.http.h2.client import H2Connection
from protobench.protocols.http.h2.frames import RequestFrames
from protobench.protocols.timestamps.clock import Stamps
from protobench.vocab.counters import CONNECTION_SAMPLES, STREAM_SAMPLES
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Tally

SAMPLE_SECONDS = 0.1
RETRIED = "h2_retried"
"""Requests sent again on a new connection after a GOAWAY dropped them unprocessed."""
STREAM_WAITS = "h2_stream_waits"
"""Requests that waited for a stream: the server's concurrency limit was reached."""


class H2Link:
    """The connection of up to ``streams`` sessions (see the module)."""

    def __init__(
        self,
        conn: H2Connection,
        opener: Callable[[], Awaitable[H2Connection]],
        accept: frozenset[int],
        count: Callable[[str, int], None],
        sent: Tally,
    ) -> None:
        self._opener = opener
        self._accept = accept
        self._count = count
        self._sent = sent
        self._waiting: list[tuple[RequestFrames, Stamps, Done, bool]] = []
        self._reopening: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self.conn = self._bind(conn)
        self._sampler = self._loop.call_later(SAMPLE_SECONDS, self._sample)

    @property
    def alive(self) -> bool:
        """Whether the link takes requests (not closed; its connection may be reopening)."""
        return not self._closed

    def _bind(self, conn: H2Connection) -> H2Connection:
        conn.accept = self._accept
        conn.sent = self._sent
        conn.on_unavailable = self._unavailable
        conn.on_queued = self._queued
        return conn

    def _queued(self) -> None:
        self._count(STREAM_WAITS, 1)

    def _sample(self) -> None:
        count = self._count
        count(STREAM_SAMPLES, self.conn.streams)
        count(CONNECTION_SAMPLES, 1)
        self._sampler = self._loop.call_later(SAMPLE_SECONDS, self._sample)

    def _unavailable(self, request: RequestFrames, stamps: Stamps, done: Done, retry: bool) -> None:
        if self._closed:
            done(OpError(ErrorClass.CLOSED, "the session closed"), 0)
            return
        if retry:
            self._count(RETRIED, 1)
        self._waiting.append((request, stamps, done, retry))
        if self._reopening is None:
            self._reopening = self._loop.create_task(self._reopen())

    async def _reopen(self) -> None:
        try:
            conn = await self._opener()
        except OpError as exc:
            waiting, self._waiting = self._waiting, []
            self._reopening = None
            for _, _, done, _ in waiting:
                done(exc, 0)
            return
        self._reopening = None
        if self._closed:
            conn.close()
            return
        self.conn = self._bind(conn)  # the old one closes itself once its streams are done
        waiting, self._waiting = self._waiting, []
        for request, stamps, done, retried in waiting:
            conn.submit(request, stamps, done, retried)

    def close(self) -> None:
        """Close the connection and stop reopening it. Idempotent."""
        self._closed = True
        self._sampler.cancel()
        if self._reopening is not None:
            self._reopening.cancel()
            self._reopening = None
        self._waiting = []
        self.conn.close()
