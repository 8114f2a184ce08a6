"""The MQTT plugin: publish, subscribe, connect and idle over MQTT 3.1.1 and 5.0.

A small sans-I/O codec of our own (:mod:`.codec`) on an asyncio protocol
(:mod:`.client`) keeps the hot path lean; paho-mqtt is the independent
reference in the tests. See :mod:`.sessions` for what each operation measures
and :mod:`.options` for the options and parameters.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, ClassVar

from protobench.protocols.base import ProtocolPlugin, Session, SessionContext, StrictModel
from protobench.protocols.mqtt.diagnose import findings
from protobench.protocols.mqtt.options import (
    ConnectParams,
    DropParams,
    IdleParams,
    MqttOptions,
    PublishParams,
    SubscribeParams,
)
from protobench.protocols.mqtt.sessions import open_session


class MqttProtocol(ProtocolPlugin):
    """MQTT 3.1.1 / 5.0 workloads: fan-out with end-to-end latency, storms, idle connections."""

    name = "mqtt"
    description = (
        "MQTT 3.1.1/5.0 over TCP, TLS or WebSocket: publish, subscribe (end-to-end latency, "
        "loss), connect, drop (wills), idle"
    )
    options = MqttOptions
    operations: ClassVar[Mapping[str, type[StrictModel]]] = {
        "publish": PublishParams,
        "subscribe": SubscribeParams,
        "connect": ConnectParams,
        "drop": DropParams,
        "idle": IdleParams,
    }
    embedded_target = "mqtt"
    url_schemes = ("mqtt", "mqtts", "ws", "wss")
    secret_options = frozenset({"password"})
    counts_connects = True
    passive_ops = frozenset({"idle"})
    latency_kinds: ClassVar[Mapping[str, str]] = {
        "publish": "local_write",
        "subscribe": "one_way",
        "connect": "round_trip",
        "drop": "round_trip",
        "idle": "round_trip",
    }
    """What each op's latency measures. ``publish`` is a local write at QoS 0 (the
    default and the built-ins' fan-out and throughput) but ``to_ack`` (to PUBACK or
    PUBCOMP) at QoS 1/2: :meth:`latency_kind` tells by the group's params. ``idle``
    records no latency."""

    def latency_kind(self, op: str, params: Mapping[str, Any] | None = None) -> str:
        """What ``op``'s latency measures with these group params (``publish`` by QoS)."""
        if op == "publish" and params is not None and int(params.get("qos", 0)):
            return "to_ack"
        return self.latency_kinds[op]

    def memory_per_connection(self, ops: Collection[str]) -> bool:
        """Only a run that moves no messages (``idle``, ``connect``, ``drop``): a broker's memory
        grows with the messages it queues, which no connection count divides."""
        return not {"publish", "subscribe"} & set(ops)

    def diagnose(self, ops: Mapping[str, Mapping[str, int]]) -> list[str]:
        """Where messages stayed: broker drops, subscriber backlog, generator (see
        :mod:`.diagnose`)."""
        return findings(ops)

    async def open_session(self, ctx: SessionContext) -> Session:
        return await open_session(ctx)


__all__ = ["MqttProtocol"]
