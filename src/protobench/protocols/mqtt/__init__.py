"""The MQTT plugin: publish, subscribe, connect and idle over MQTT 3.1.1 and 5.0.

A small sans-I/O codec of our own (:mod:`.codec`) on an asyncio protocol
(:mod:`.client`) keeps the hot path lean; paho-mqtt is the independent
reference in the tests. See :mod:`.sessions` for what each operation measures
and :mod:`.options` for the options and parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from protobench.protocols.base import Protocol, Session, SessionContext, StrictModel
from protobench.protocols.mqtt.options import (
    ConnectParams,
    IdleParams,
    MqttOptions,
    PublishParams,
    SubscribeParams,
)
from protobench.protocols.mqtt.sessions import open_session


class MqttProtocol(Protocol):
    """MQTT 3.1.1 / 5.0 workloads: fan-out with end-to-end latency, storms, idle connections."""

    name = "mqtt"
    description = "MQTT 3.1.1/5.0: publish, subscribe (end-to-end latency, loss), connect, idle"
    options = MqttOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = {
        "publish": PublishParams,
        "subscribe": SubscribeParams,
        "connect": ConnectParams,
        "idle": IdleParams,
    }
    embedded_target = "mqtt"
    url_schemes = ("mqtt", "mqtts")
    secret_options = frozenset({"password"})
    passive_ops = frozenset({"idle"})

    async def open_session(self, ctx: SessionContext) -> Session:
        return await open_session(ctx)


__all__ = ["MqttProtocol"]
