"""Sessions of the hot-path operations, on the lean client.

``read-property``, ``write-property``, ``read-property-multiple``,
``write-property-multiple`` and ``object-list`` each open a
:class:`~protobench.protocols.bacnet_ip.client.DatagramClient`, register it
as a foreign device when the options say so, read the device's object-list
once when a selector is a wildcard or the op is ``object-list``
(:mod:`.inventory`: it names the device and resolves wildcard selectors),
pre-encode every request the session will send, and then send them in
turn, one per :meth:`LeanSession.submit`. Session *i* of a group
starts at the *i*-th request so that a group's sessions spread over the
objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bac_py.types.enums import PropertyIdentifier
from bac_py.types.parsing import parse_property_identifier
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.bacnet_ip.client import DatagramClient
from protobench.protocols.bacnet_ip.codec import (
    ObjectListRequest,
    ReadMultipleRequest,
    ReadRequest,
    Request,
    WriteMultipleRequest,
    WriteRequest,
    encode_write_value,
)
from protobench.protocols.bacnet_ip.inventory import (
    Inventory,
    needs_probe,
    read_inventory,
    unprobed,
)
from protobench.protocols.bacnet_ip.link import Path, Route
from protobench.protocols.bacnet_ip.objects import object_name
from protobench.protocols.bacnet_ip.options import (
    BacnetIpOptions,
    ObjectListParams,
    ReadPropertyMultipleParams,
    ReadPropertyParams,
    WritePropertyMultipleParams,
    WritePropertyParams,
    local_address,
)
from protobench.protocols.base import CallbackSession, Done, SessionContext, StrictModel
from protobench.vocab.errors import ErrorClass, OpError


class LeanSession(CallbackSession):
    """Sends pre-encoded requests in turn over one datagram client."""

    def __init__(self, client: DatagramClient, requests: list[Request], start: int) -> None:
        self.client = client
        self.requests = requests
        self._count = len(requests)
        self._next = start % self._count

    def submit(self, done: Done) -> None:
        position = self._next
        self._next = position + 1 if position + 1 < self._count else 0
        self.client.send(self.requests[position], done)

    async def close(self) -> None:
        self.client.close()


def route_of(target: TargetAddress) -> Route | None:
    if target.dnet is None or target.dadr is None:
        return None
    return Route(target.dnet, target.dadr)


async def open_client(
    target: TargetAddress,
    options: BacnetIpOptions,
    request_timeout: float,
    count: Callable[[str, int], None] | None = None,
    ctx: SessionContext | None = None,
) -> DatagramClient:
    """A datagram client to ``target``, registered as a foreign device if the options say so
    (a session's, with its ``ctx``: its stamps, and its reactor when the run reads the kernel's
    clock). On BACnet/IPv6 it first learns the first hop's VMAC."""
    if options.foreign_device and (options.bbmd or target.bbmd) != target.endpoint:
        raise OpError(
            ErrorClass.LOCAL,
            "foreign_device needs a BBMD at the target's address (bbmd=1 in the target URL)",
        )
    try:
        client = DatagramClient(
            target.host,
            target.port,
            local_address(options, target.ipv6),
            route_of(target),
            request_timeout,
            options.retries,
            options.reuse_after,
            count,
            ctx.stamps if ctx is not None else None,
            ctx.reactor if ctx is not None else None,
        )
    except OSError as exc:
        raise OpError(ErrorClass.CONNECT, f"cannot open a UDP socket: {exc}") from exc
    try:
        if client.ipv6:
            await client.resolve(request_timeout)
        if options.foreign_device:
            try:
                async with asyncio.timeout(request_timeout):
                    await client.register_foreign_device(options.bbmd_ttl)
            except TimeoutError:
                raise OpError(ErrorClass.TIMEOUT, "no reply to Register-Foreign-Device") from None
    except BaseException:
        client.close()
        raise
    return client


Builder = Callable[[StrictModel, Inventory, Path | None], list[Request]]


def read_property(params: StrictModel, inventory: Inventory, path: Path | None) -> list[Request]:
    assert isinstance(params, ReadPropertyParams)
    prop = parse_property_identifier(params.property)
    return [
        ReadRequest(oid, prop, path, params.array_index, params.expect)
        for oid in inventory.select(params.objects)
    ]


def write_property(params: StrictModel, inventory: Inventory, path: Path | None) -> list[Request]:
    assert isinstance(params, WritePropertyParams)
    prop = parse_property_identifier(params.property)
    objects = inventory.select(params.objects)
    values = params.values
    requests: list[Request] = []
    # Every object takes the values in turn (pass p writes value p + i to
    # object i), so each write changes the value it overwrites.
    for k in range(len(objects) * len(values)):
        oid = objects[k % len(objects)]
        value = values[(k // len(objects) + k % len(objects)) % len(values)]
        encoded = _encode(value, params.datatype, oid, prop)
        label = f"{object_name(oid)} {params.property} := {value!r}"
        requests.append(WriteRequest(oid, prop, encoded, params.priority, path, label))
    return requests


def read_property_multiple(
    params: StrictModel, inventory: Inventory, path: Path | None
) -> list[Request]:
    assert isinstance(params, ReadPropertyMultipleParams)
    requests: list[Request] = []
    for spec in params.requests:
        specs = [
            (oid, [parse_property_identifier(p) for p in props])
            for selector, props in spec.items()
            for oid in inventory.select([selector])
        ]
        requests.append(ReadMultipleRequest(specs, path))
    return requests


def write_property_multiple(
    params: StrictModel, inventory: Inventory, path: Path | None
) -> list[Request]:
    assert isinstance(params, WritePropertyMultipleParams)
    requests: list[Request] = []
    for spec in params.requests:
        specs = []
        for selector, values in spec.items():
            for oid in inventory.select([selector]):
                encoded = []
                for name, value in values.items():
                    prop = parse_property_identifier(name)
                    encoded.append((prop, _encode(value, params.datatype, oid, prop)))
                specs.append((oid, encoded))
        requests.append(WriteMultipleRequest(specs, params.priority, path))
    return requests


def object_list(params: StrictModel, inventory: Inventory, path: Path | None) -> list[Request]:
    assert isinstance(params, ObjectListParams)
    return [ObjectListRequest(inventory.device.instance_number, path, params.expect_count)]


def _encode(
    value: bool | float | str, datatype: str, oid: ObjectIdentifier, prop: PropertyIdentifier
) -> bytes:
    try:
        return encode_write_value(value, datatype, oid, prop)
    except ValueError as exc:
        raise OpError(ErrorClass.LOCAL, f"{object_name(oid)}: {exc}") from None


def selectors_of(params: StrictModel) -> list[str]:
    """Every object selector of a hot-path operation's parameters."""
    if isinstance(params, ReadPropertyParams | WritePropertyParams):
        return list(params.objects)
    if isinstance(params, ReadPropertyMultipleParams | WritePropertyMultipleParams):
        return [selector for spec in params.requests for selector in spec]
    return []


BUILDERS: dict[str, Builder] = {
    "read-property": read_property,
    "write-property": write_property,
    "read-property-multiple": read_property_multiple,
    "write-property-multiple": write_property_multiple,
    "object-list": object_list,
}


async def open_lean_session(
    ctx: SessionContext, target: TargetAddress, options: BacnetIpOptions
) -> LeanSession:
    """Open a hot-path session for ``ctx.op``."""
    build = BUILDERS[ctx.op]
    params = ctx.params
    device = params.device if isinstance(params, ObjectListParams) else None
    client = await open_client(target, options, ctx.timeout, ctx.count, ctx)
    try:
        if isinstance(params, ObjectListParams) or needs_probe(selectors_of(params)):
            inventory = await read_inventory(client, target, device, options, ctx.timeout)
        else:
            inventory = unprobed(target)
        requests = build(ctx.params, inventory, client.path)
    except BaseException:
        client.close()
        raise
    client.sent = ctx.sent
    return LeanSession(client, requests, ctx.index)
