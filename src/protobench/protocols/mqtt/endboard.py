"""Publishers' final counts, heard beside the data: what a backlogged subscriber still owes.

A publisher's end marker follows its messages on their topic, so behind a
subscriber's backlog it arrives late or not at all by the end of the drain.
Each publisher therefore also sends a copy of its marker, followed by its
topic, to ``protobench-end/<publisher id>``, and not on its own connection
(whose socket may hold seconds of messages the broker has not read yet) but on
its process's :class:`EndBoard`: one connection per worker process (per
target), which carries a few messages and so no backlog, subscribed to
``protobench-end/+``; it keeps every publisher's ``(count, topic)``. At
the end a subscriber takes, for every publisher on the board whose topic
matches one of its filters (:func:`topic_matches`), the messages it never
received as ``undelivered``.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import ClassVar, Final

from protobench.protocols.mqtt.client import MqttConnection, subscribe_or_close
from protobench.protocols.mqtt.codec import Publish, encode
from protobench.protocols.mqtt.payload import END, HEADER, HEADER_SIZE, MAGIC
from protobench.vocab.errors import OpError

END_TOPIC: Final = "protobench-end/{publisher:08x}"
END_FILTER: Final = "protobench-end/+"


def topic_matches(topic_filter: str, topic: str) -> bool:
    """MQTT matching of a topic name against a filter (``+``, ``#``, ``$share/G/``)."""
    if topic_filter.startswith("$share/"):
        topic_filter = topic_filter.split("/", 2)[2] if topic_filter.count("/") >= 2 else ""
    if topic.startswith("$") and topic_filter[:1] in ("+", "#"):
        return False
    levels = topic.split("/")
    parts = topic_filter.split("/")
    for i, part in enumerate(parts):
        if part == "#":
            return True
        if i >= len(levels) or (part != "+" and part != levels[i]):
            return False
    return len(parts) == len(levels)


def end_copy(marker: bytes, topic: str) -> bytes:
    """The board's copy of an end marker: the marker, then the publisher's topic."""
    return marker + topic.encode()


class EndBoard:
    """Final counts of the publishers that ended: publisher id -> (count, topic)."""

    _boards: ClassVar[
        weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[EndBoard | None]]
        ]
    ] = weakref.WeakKeyDictionary()

    def __init__(self, conn: MqttConnection) -> None:
        self.conn = conn
        self.ends: dict[int, tuple[int, str]] = {}
        conn.on_messages = self._messages

    def _messages(self, data: bytes, spans: list[int], now: int) -> None:
        for i in range(0, len(spans), 2):
            start, end = spans[i], spans[i + 1]
            if end - start < HEADER_SIZE:
                continue
            magic, flags, publisher, count, _ = HEADER.unpack_from(data, start)
            if magic == MAGIC and flags & END:
                topic = bytes(data[start + HEADER_SIZE : end]).decode(errors="replace")
                self.ends[publisher] = (count, topic)

    def announce(self, publisher: int, marker: bytes, topic: str, timeout: float) -> None:
        """Publish the board's copy of ``publisher``'s end marker (QoS 1)."""
        conn = self.conn
        if conn.error is not None:
            return
        try:
            pid = conn.track(_ignore, timeout)
        except OpError:
            return
        copy = Publish(END_TOPIC.format(publisher=publisher), end_copy(marker, topic), 1)
        copy.packet_id = pid
        conn.send(encode(copy, conn.version))

    @classmethod
    async def of(
        cls, target: str, opener: Callable[[], Awaitable[MqttConnection]], within: float
    ) -> EndBoard | None:
        """This process's board for ``target``, opened once; None if the broker refuses it."""
        boards = cls._boards.setdefault(asyncio.get_running_loop(), {})
        future = boards.get(target)
        if future is None:
            future = boards[target] = asyncio.ensure_future(cls._open(opener, within))
        board = await asyncio.shield(future)
        if board is not None and board.conn.error is not None:
            boards.pop(target, None)  # its connection died: the next subscriber opens another
        return board

    @staticmethod
    async def _open(
        opener: Callable[[], Awaitable[MqttConnection]], within: float
    ) -> EndBoard | None:
        try:
            conn = await opener()
        except OpError:
            return None
        if not await subscribe_or_close(conn, [(END_FILTER, 1)], within):
            return None
        return EndBoard(conn)


def _ignore(error: OpError | None, nbytes: int) -> None:
    return None
