"""MQTT over WebSocket: an MQTT connection carried in the binary messages of a WebSocket.

A ``ws://`` or ``wss://`` broker URL opens a WebSocket (the ``websocket``
plugin's client: its handshake, TLS and framing) asking for the subprotocol
``mqtt`` (MQTT 5.0 §6, 3.1.1 §6), and puts an :class:`WsLink` under the
:class:`~protobench.protocols.mqtt.client.MqttConnection` as its transport:
each write of the MQTT connection (one event-loop turn's packets) goes out as
one binary message, and the payload of each message received is fed to the
MQTT decoder, which does not care where packets are split. Back-pressure
follows the socket (the WebSocket's ``pause_writing`` pauses the MQTT
connection); a close frame or a lost socket ends the MQTT connection as
``closed``. A server that does not choose the ``mqtt`` subprotocol is a
``protocol`` error (MQTT-6.0.0-3 obliges the broker to choose it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from protobench.protocols.websocket.client import WsConnection
from protobench.protocols.websocket.client import connect as ws_connect
from protobench.protocols.websocket.options import WebSocketOptions
from protobench.vocab.errors import ErrorClass, OpError

SUBPROTOCOL = "mqtt"


class WsLink(asyncio.Transport):
    """What an :class:`asyncio.Protocol` (the MQTT connection) needs of a transport, over a
    :class:`WsConnection`: ``write`` sends a binary message."""

    def __init__(self, ws: WsConnection, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self.ws = ws
        self._protocol = protocol
        self._lost = False
        ws.set_on_message(self._message)
        ws.on_lost = self._on_lost
        ws.on_writable = self._writable

    def _message(self, text: bool, payload: bytes) -> None:
        self._protocol.data_received(payload)

    def _writable(self, writable: bool) -> None:
        if writable:
            self._protocol.resume_writing()
        else:
            self._protocol.pause_writing()

    def _on_lost(self, error: OpError) -> None:
        if not self._lost:
            self._lost = True
            self._protocol.connection_lost(None)

    # asyncio.Transport, as the MQTT connection uses it

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.ws.lost is None:
            self.ws.send(bytes(data), False)

    def close(self) -> None:
        self.ws.close()
        self._on_lost(OpError(ErrorClass.CLOSED, "closed by the client"))

    def abort(self) -> None:
        transport = self.ws.transport
        if transport is not None:
            transport.abort()
        self._on_lost(OpError(ErrorClass.CLOSED, "aborted by the client"))

    def is_closing(self) -> bool:
        return self._lost or self.ws.lost is not None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        transport = self.ws.transport
        return default if transport is None else transport.get_extra_info(name, default)


async def open_link(
    url: str, options: WebSocketOptions, protocol: asyncio.Protocol, within: float, index: int
) -> WsLink:
    """Open the WebSocket of ``url`` (from session ``index``'s source address) and make it
    ``protocol``'s transport; raise :class:`OpError` as the WebSocket client maps them."""
    ws = await ws_connect(url, options, within, index=index)
    if ws.subprotocol != SUBPROTOCOL:
        ws.close()
        chosen = repr(ws.subprotocol) if ws.subprotocol else "none"
        raise OpError(
            ErrorClass.PROTOCOL,
            f"the server chose the WebSocket subprotocol {chosen}, not {SUBPROTOCOL!r}",
        )
    link = WsLink(ws, protocol)
    protocol.connection_made(link)
    return link
