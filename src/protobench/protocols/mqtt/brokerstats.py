"""What the broker says it dropped: a watch of ``$SYS/broker/publish/messages/dropped``.

mosquitto counts the PUBLISH messages it dropped because a client's queue or
in-flight limits were full and publishes the total every ``sys_interval``
seconds as a retained ``$SYS`` message. :class:`DropWatch` holds its own
connection subscribed to that topic: the first value is the baseline, every
later increase is added to the ``broker_dropped`` counter of the recorder it is
given. Brokers without that topic (or refusing ``$SYS`` subscriptions) simply
give no figure.
"""

from __future__ import annotations

from typing import Final

from protobench.protocols.mqtt.client import MqttConnection, subscribe_or_close
from protobench.vocab.recorder import Recorder

DROPPED_TOPIC: Final = "$SYS/broker/publish/messages/dropped"


class DropWatch:
    """The broker's dropped-message total, as increases since the watch began."""

    def __init__(self, conn: MqttConnection) -> None:
        self.conn = conn
        self.recorder: Recorder | None = None
        self.last: int | None = None
        conn.on_messages = self._messages

    def _messages(self, data: bytes, spans: list[int], now: int) -> None:
        for i in range(0, len(spans), 2):
            try:
                value = int(data[spans[i] : spans[i + 1]])
            except ValueError:
                continue
            if self.last is not None and value > self.last and self.recorder is not None:
                self.recorder.count("broker_dropped", value - self.last)
            self.last = value

    def close(self) -> None:
        self.conn.disconnect()


async def watch_drops(conn: MqttConnection, within: float) -> DropWatch | None:
    """Subscribe ``conn`` to the broker's dropped total; None (connection closed) if refused."""
    watch = DropWatch(conn)  # before subscribing: the retained value may share SUBACK's read
    return watch if await subscribe_or_close(conn, [(DROPPED_TOPIC, 0)], within) else None
