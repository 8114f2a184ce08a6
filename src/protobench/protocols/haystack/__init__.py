"""Project Haystack plugin (HTTP and WebSocket, SCRAM-SHA-256); see :mod:`.plugin`."""

from protobench.protocols.haystack.plugin import HaystackProtocol

__all__ = ["HaystackProtocol"]
