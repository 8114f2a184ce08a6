"""What a session learns of its device before it sends: the device instance and its object-list.

The probe reads the device's object-list once (:func:`read_inventory`):

1. whole, in one ReadProperty (a segmented reply is fine: the client
   reassembles it);
2. when the device cannot send it whole (an Abort or Reject such as
   ``abort:segmentation-not-supported``), as an array: element 0 for its
   length, then the elements in ReadPropertyMultiple batches of
   :data:`BATCH` (halved when a batch is too big), or one ReadProperty per
   element when the device has no ReadPropertyMultiple;
3. when the device refuses the wildcard instance 4194303
   (``object:unknown-object``), the instance is learnt with a Who-Is sent to
   the target's address (:func:`learn_instance`), and the probe starts again
   with it; without an I-Am the error says to add ``?device=N`` to the URL.

A failed probe is labelled as the probe (``object-list probe of
device:4194303: ...``). Sessions whose selectors are all fixed
(``analog-input:1-5``) need no object-list and skip the probe
(:func:`needs_probe`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bac_py.types.enums import ObjectType, PropertyIdentifier
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.bacnet_ip.bacpy import start_client
from protobench.protocols.bacnet_ip.client import DatagramClient
from protobench.protocols.bacnet_ip.codec import ArrayElementsRequest, DeviceProbe, ReadRequest
from protobench.protocols.bacnet_ip.objects import (
    MAX_INSTANCE,
    device_in,
    expand_all,
    object_name,
    parse_selector,
)
from protobench.protocols.bacnet_ip.options import BacnetIpOptions
from protobench.vocab.errors import ErrorClass, OpError

BATCH = 32
"""Object-list elements per ReadPropertyMultiple (about 12 bytes each in the reply)."""
WHO_IS_INSTANCE = 4_194_000
"""Device instance of the short-lived client that sends Who-Is."""
TOO_BIG = frozenset(
    {
        "abort:segmentation-not-supported",
        "abort:buffer-overflow",
        "abort:apdu-too-long",
        "reject:buffer-overflow",
    }
)
"""Codes of a device whose reply does not fit in what it can send."""
UNKNOWN_OBJECT = "object:unknown-object"
PROBE = "object-list probe"
NO_SERVICE = frozenset({"reject:unrecognized-service", "service:service-request-denied"})

_learned: dict[str, int] = {}
"""Device instances learnt by Who-Is in this process, by device address (HOST:PORT, NET:MAC)."""
_asking: dict[str, asyncio.Future[int | None]] = {}
"""Who-Is exchanges under way, by device address."""


@dataclass(frozen=True)
class Inventory:
    """The device that answered and its object-list (empty when not read)."""

    device: ObjectIdentifier
    objects: list[ObjectIdentifier]

    def select(self, selectors: list[str]) -> list[ObjectIdentifier]:
        chosen = expand_all([parse_selector(s) for s in selectors], self.objects)
        if not chosen:
            raise OpError(ErrorClass.LOCAL, f"no object of the device matches {selectors}")
        return chosen


def needs_probe(selectors: list[str]) -> bool:
    """Whether any selector is a wildcard (``analog-input:*``), so the object-list is needed."""
    return any(parse_selector(s).wildcard for s in selectors)


def unprobed(target: TargetAddress) -> Inventory:
    """The inventory of a session that does not read the object-list."""
    return Inventory(ObjectIdentifier(ObjectType.DEVICE, target.device_instance), [])


async def read_inventory(
    client: DatagramClient,
    target: TargetAddress,
    device: int | None,
    options: BacnetIpOptions,
    wait: float,
) -> Inventory:
    """Read the object-list of ``device`` (default: the target's, else the one that answers)."""
    instance = device if device is not None else target.device
    if instance is None:
        instance = _learned.get(target.device_address, MAX_INSTANCE)
    try:
        return await _read_object_list(client, instance)
    except OpError as exc:
        if exc.code != UNKNOWN_OBJECT or instance != MAX_INSTANCE:
            raise as_probe(exc, instance) from None
        refused = exc
    learned = await learn_instance(target, options, wait)
    if learned is None:
        raise OpError(
            refused.error_class,
            f"{refused.detail}; the device refuses the wildcard instance {MAX_INSTANCE} "
            "and sent no I-Am to a Who-Is: add ?device=N to the target URL",
            refused.code,
        )
    try:
        return await _read_object_list(client, learned)
    except OpError as exc:
        raise as_probe(exc, learned) from None


def as_probe(error: OpError, instance: int) -> OpError:
    """``error`` labelled as the object-list probe's (unless it is already)."""
    label = f"{PROBE} of {object_name(ObjectIdentifier(ObjectType.DEVICE, instance))}"
    if error.detail.startswith(PROBE):
        return error
    return OpError(error.error_class, f"{label}: {error.detail}", error.code)


async def _read_object_list(client: DatagramClient, instance: int) -> Inventory:
    path = client.path
    whole = DeviceProbe(instance, path)
    try:
        await client.request(whole)
    except OpError as exc:
        if exc.code not in TOO_BIG:
            raise
    else:
        return Inventory(whole.device, whole.objects)
    length = DeviceProbe(instance, path, array_index=0)
    await client.request(length)
    objects = await _read_elements(client, length.device, length.length)
    device = device_in(length.device, objects)
    if device is None:
        raise OpError(
            ErrorClass.VALIDATION, f"{length.label}: the object-list lacks the device itself"
        )
    return Inventory(device, objects)


async def _read_elements(
    client: DatagramClient, device: ObjectIdentifier, length: int
) -> list[ObjectIdentifier]:
    """Elements 1..length of the device's object-list, in RPM batches or one by one."""
    objects: list[ObjectIdentifier] = []
    batch = BATCH
    first = 1
    while first <= length:
        last = min(length, first + batch - 1)
        request = ArrayElementsRequest(
            device, PropertyIdentifier.OBJECT_LIST, first, last, client.path
        )
        try:
            await client.request(request)
        except OpError as exc:
            if exc.code in TOO_BIG and batch > 1:
                batch //= 2
                continue
            if exc.code not in NO_SERVICE:
                raise
            return objects + await _read_one_by_one(client, device, first, length)
        objects += [_object(request.label, value) for value in request.values]
        first = last + 1
    return objects


async def _read_one_by_one(
    client: DatagramClient, device: ObjectIdentifier, first: int, length: int
) -> list[ObjectIdentifier]:
    objects = []
    for index in range(first, length + 1):
        request = ReadRequest(device, PropertyIdentifier.OBJECT_LIST, client.path, index)
        await client.request(request)
        objects.append(_object(request.label, request.value))
    return objects


def _object(label: str, value: object) -> ObjectIdentifier:
    if not isinstance(value, ObjectIdentifier):
        raise OpError(ErrorClass.VALIDATION, f"{label}: {value!r} is not an object identifier")
    return value


async def learn_instance(
    target: TargetAddress, options: BacnetIpOptions, wait: float
) -> int | None:
    """The instance of the device at the target, from its I-Am to a Who-Is sent to it.

    The Who-Is goes to the target's address (or its router's, for the remote
    network); a device answers with an I-Am, which comes back when the device
    sends it to the asker (a broadcast I-Am on loopback does not reach an
    ephemeral port, unless the client is a foreign device of the target's
    BBMD, as it is when the URL names one). ``None`` when no single device
    answered. Sessions opening together share one Who-Is; the answer is kept
    for the process.
    """
    key = target.device_address
    if key in _learned:
        return _learned[key]
    asking = _asking.get(key)
    if asking is None:
        asking = asyncio.ensure_future(_who_is(target, options, wait))
        _asking[key] = asking
        asking.add_done_callback(lambda _: _asking.pop(key, None))
    instance = await asyncio.shield(asking)
    if instance is not None:
        _learned[key] = instance
    return instance


async def _who_is(target: TargetAddress, options: BacnetIpOptions, wait: float) -> int | None:
    found = []
    try:
        async with asyncio.timeout(2 * wait + 1.0):
            started = await start_client(target, options, WHO_IS_INSTANCE, wait, target.bbmd)
            try:
                found = await started.client.who_is(
                    destination=started.device, timeout=wait, expected_count=1
                )
            finally:
                await started.stop()
    except (OpError, OSError, TimeoutError, ValueError):
        return None
    instances = {iam.object_identifier.instance_number for iam in found}
    return instances.pop() if len(instances) == 1 else None
