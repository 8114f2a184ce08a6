"""Beckn v2 plugin (signed BAP requests, mock BPP, callbacks); see :mod:`.plugin`."""

from protobench.protocols.beckn.plugin import BecknProtocol

__all__ = ["BecknProtocol"]
