"""The ``bacnet-sc`` protocol: :mod:`.plugin` (ops), :mod:`.link` (hub), :mod:`.sessions`."""

from protobench.protocols.bacnet_sc.plugin import BacnetScProtocol

__all__ = ["BacnetScProtocol"]
