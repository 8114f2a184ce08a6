"""An amqtt broker for the MQTT interop tests, run by the peer venv's Python (see support.mqtt).

``python amqtt_broker.py PORT COUNTS_FILE [WS_PORT]``: an anonymous amqtt broker on
127.0.0.1:PORT (and MQTT over WebSocket on 127.0.0.1:WS_PORT) that counts every
PUBLISH it received and sent, by the first level of the topic, and writes the
counts as JSON to COUNTS_FILE each time it is asked (SIGUSR1) and when it stops
(SIGTERM): the broker's own truth.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amqtt.broker import Broker
from amqtt.mqtt.packet import PUBLISH
from amqtt.plugins.base import BasePlugin

COUNTS: dict[str, Counter[str]] = {"received": Counter(), "sent": Counter()}


def _topic(packet: Any) -> str:
    return str(packet.variable_header.topic_name).split("/", 1)[0]


class Count(BasePlugin):  # type: ignore[type-arg]
    """PUBLISH packets in and out, by the topic's first level."""

    @dataclass
    class Config:
        pass

    async def on_mqtt_packet_received(self, *, packet: Any, session: Any = None) -> None:
        if packet.fixed_header.packet_type == PUBLISH:
            COUNTS["received"][_topic(packet)] += 1

    async def on_mqtt_packet_sent(self, *, packet: Any, session: Any = None) -> None:
        if packet.fixed_header.packet_type == PUBLISH:
            COUNTS["sent"][_topic(packet)] += 1


async def main(port: int, counts_file: Path, ws_port: int | None) -> None:
    listeners: dict[str, Any] = {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}}
    if ws_port is not None:
        listeners["ws"] = {"type": "ws", "bind": f"127.0.0.1:{ws_port}"}
    broker = Broker(
        {
            "listeners": listeners,
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
                "__main__.Count": {},
            },
        }
    )
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, _write, counts_file)
    await stop.wait()
    await broker.shutdown()
    _write(counts_file)


def _write(counts_file: Path) -> None:
    """Write the counts whole: a reader sees the old file or the new one, never half."""
    partial = counts_file.with_suffix(".tmp")
    partial.write_text(json.dumps(COUNTS))
    os.replace(partial, counts_file)


if __name__ == "__main__":
    ws = int(sys.argv[3]) if len(sys.argv) > 3 else None
    asyncio.run(main(int(sys.argv[1]), Path(sys.argv[2]), ws))
