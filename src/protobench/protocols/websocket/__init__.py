"""The ``websocket`` protocol: see :mod:`.plugin` (ops), :mod:`.connection` (I/O), :mod:`.codec`."""

from protobench.protocols.websocket.plugin import WebSocketProtocol

__all__ = ["WebSocketProtocol"]
