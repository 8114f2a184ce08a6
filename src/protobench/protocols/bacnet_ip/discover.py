"""What a BACnet/IP device has: its identity, objects, value datatypes and commandable objects.

:func:`discover` asks the device at a ``bacnet://`` URL:

1. Who-Is, sent to the device's address (its I-Am names its instance);
2. its object-list, with the probe of the load sessions
   (:mod:`.inventory`: whole or segmented, else as an array; the wildcard
   instance, else the instance of the I-Am);
3. its device object (name, vendor, model, max APDU, segmentation, whether
   it serves SubscribeCOV);
4. for every other object, with ReadPropertyMultiple in small batches (or
   ReadProperty when the device has no RPM): object-name, present-value,
   units, status-flags, number-of-states and priority-array element 0. The
   present-value's application tag gives its datatype; an object with a
   priority-array is commandable; the properties that answered are the
   object's readable properties;
5. when the device serves SubscribeCOV, which object accepts a subscription
   (:func:`place_cov`): one object of each type with a present value, in
   turn, is subscribed to (unconfirmed, a short lifetime) and, once accepted,
   unsubscribed; refusals (a Timer's ``services:cov-subscription-failed``)
   are kept to say why no COV group was fitted.

The control path uses bac-py's client (:mod:`.bacpy`: its RPM, decoding,
segmentation and COV) and the lean client for the object-list probe, on
BACnet/IP or BACnet/IPv6. :mod:`.fit` turns the result into a summary and a
profile.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field, replace

from bac_py.encoding.tags import TagClass, decode_tag
from bac_py.services.read_property_multiple import (
    PropertyReference,
    ReadAccessSpecification,
    ReadPropertyMultipleACK,
)
from bac_py.types.enums import ObjectType, PropertyIdentifier, Segmentation
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.address import TargetAddress, parse_target
from protobench.protocols.bacnet_ip.bacpy import StartedClient, start_client
from protobench.protocols.bacnet_ip.codec import decode_value
from protobench.protocols.bacnet_ip.errors import from_exception
from protobench.protocols.bacnet_ip.inventory import (
    WHO_IS_INSTANCE,
    learn_instance,
    read_inventory,
)
from protobench.protocols.bacnet_ip.objects import object_name, property_name
from protobench.protocols.bacnet_ip.options import BacnetIpOptions
from protobench.protocols.bacnet_ip.sessions import open_client
from protobench.vocab.errors import ErrorClass, OpError

BATCH = 5
"""Objects per ReadPropertyMultiple while discovering."""
PROBED = (
    PropertyIdentifier.OBJECT_NAME,
    PropertyIdentifier.PRESENT_VALUE,
    PropertyIdentifier.UNITS,
    PropertyIdentifier.STATUS_FLAGS,
    PropertyIdentifier.NUMBER_OF_STATES,
)
DEVICE_PROPERTIES = (
    PropertyIdentifier.OBJECT_NAME,
    PropertyIdentifier.VENDOR_NAME,
    PropertyIdentifier.MODEL_NAME,
    PropertyIdentifier.MAX_APDU_LENGTH_ACCEPTED,
    PropertyIdentifier.SEGMENTATION_SUPPORTED,
    PropertyIdentifier.PROTOCOL_SERVICES_SUPPORTED,
)
DATATYPES = {
    1: "boolean",
    2: "unsigned",
    3: "signed",
    4: "real",
    5: "double",
    7: "character-string",
    9: "enumerated",
}
"""Application tags of the datatypes a profile can write."""
SUBSCRIBE_COV_BIT = 5
NO_RPM = frozenset({"reject:unrecognized-service", "service:service-request-denied"})
COV_TRIES = 8
"""Object types tried for a COV subscription, at most (one object of each)."""
COV_TRIAL_LIFETIME = 10
"""Seconds a trial subscription lives, should its cancellation be lost."""
COV_PROCESS_ID = 4_194_001
"""Subscriber process identifier of the trial subscriptions."""


@dataclass
class ObjectInfo:
    """One object of the device, as discovered."""

    oid: ObjectIdentifier
    name: str | None = None
    datatype: str | None = None
    """The present-value's datatype (``real``, ``enumerated``...), ``None`` without one."""
    value: object = None
    commandable: bool = False
    states: int | None = None
    properties: list[str] = field(default_factory=list)
    """The probed properties that answered (``priority-array`` excluded)."""

    @property
    def selector(self) -> str:
        return object_name(self.oid)


@dataclass
class DeviceInfo:
    """A device, its objects and how it answered."""

    target: TargetAddress
    """The target URL's address, with the device instance filled in."""
    answers_who_is: bool
    name: str | None = None
    vendor: str | None = None
    model: str | None = None
    max_apdu: int | None = None
    segmentation: str | None = None
    cov: bool = False
    """Whether the device lists SubscribeCOV among its services."""
    objects: list[ObjectInfo] = field(default_factory=list)
    object_list: list[ObjectIdentifier] = field(default_factory=list)
    cov_object: ObjectIdentifier | None = None
    """The object that accepted a COV subscription."""
    cov_refusals: list[tuple[ObjectIdentifier, str]] = field(default_factory=list)
    """Objects that refused one, with the device's error (``services:cov-subscription-failed``)."""

    @property
    def cov_note(self) -> str:
        """Why no COV subscription is fitted ("" when one is)."""
        if self.cov_object is not None:
            return ""
        if not self.cov:
            return "the device does not list SubscribeCOV among its services"
        if not self.cov_refusals:
            return "no object with a present value to subscribe to"
        refused = ", ".join(f"{object_name(oid)} ({code})" for oid, code in self.cov_refusals)
        return f"every object tried refused SubscribeCOV: {refused}"

    @property
    def segments(self) -> bool:
        return self.segmentation in ("both", "transmit")


async def discover(url: str, options: BacnetIpOptions, wait: float) -> DeviceInfo:
    """Ask the device at ``url`` what it has; ``wait`` bounds each request.

    Raises :class:`OpError` (naming what failed) when the device does not answer.
    """
    try:
        target = parse_target(url)
    except ValueError as exc:
        raise OpError(ErrorClass.LOCAL, f"bad target: {exc}") from None
    heard = await learn_instance(target, options, wait)
    device = target.device if target.device is not None else heard
    lean = await open_client(target, options, wait)
    try:
        inventory = await read_inventory(lean, target, device, options, wait)
    finally:
        lean.close()
    target = replace(target, device=inventory.device.instance_number)
    info = DeviceInfo(target, heard is not None, object_list=list(inventory.objects))
    started = await start_client(target, options, WHO_IS_INSTANCE, wait)
    try:
        await _read_device(started, info, wait)
        others = [oid for oid in inventory.objects if oid.object_type != ObjectType.DEVICE]
        for first in range(0, len(others), BATCH):
            info.objects += await _read_objects(started, others[first : first + BATCH], wait)
        if info.cov:
            await place_cov(started, info, wait)
    finally:
        await started.stop()
    return info


async def _rpm(
    started: StartedClient, specs: list[ReadAccessSpecification], wait: float
) -> ReadPropertyMultipleACK:
    try:
        async with asyncio.timeout(wait + 1.0):
            return await started.client.read_property_multiple(started.device, specs, timeout=wait)
    except Exception as exc:
        raise from_exception(exc) from exc


async def _read(
    started: StartedClient, specs: list[ReadAccessSpecification], wait: float
) -> dict[ObjectIdentifier, dict[PropertyIdentifier, bytes]]:
    """The raw values that answered, by object and property (RPM, else RP one by one)."""
    found: dict[ObjectIdentifier, dict[PropertyIdentifier, bytes]] = {}
    started.refresh()
    try:
        ack = await _rpm(started, specs, wait)
    except OpError as exc:
        if exc.code not in NO_RPM:
            raise
    else:
        for result in ack.list_of_read_access_results:
            values = found.setdefault(result.object_identifier, {})
            for element in result.list_of_results:
                if element.property_access_error is None and element.property_value is not None:
                    values[element.property_identifier] = element.property_value
        return found
    for spec in specs:
        values = found.setdefault(spec.object_identifier, {})
        for ref in spec.list_of_property_references:
            # A property the object lacks answers with an Error: it is left out.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(wait + 1.0):
                    answer = await started.client.read_property(
                        started.device,
                        spec.object_identifier,
                        ref.property_identifier,
                        ref.property_array_index,
                        timeout=wait,
                    )
                values[ref.property_identifier] = answer.property_value
    return found


async def _read_device(started: StartedClient, info: DeviceInfo, wait: float) -> None:
    device = ObjectIdentifier(ObjectType.DEVICE, info.target.device_instance)
    spec = ReadAccessSpecification(device, [PropertyReference(p) for p in DEVICE_PROPERTIES])
    raw = (await _read(started, [spec], wait)).get(device, {})
    values = {prop: _decoded(value) for prop, value in raw.items()}
    info.name = _text(values.get(PropertyIdentifier.OBJECT_NAME))
    info.vendor = _text(values.get(PropertyIdentifier.VENDOR_NAME))
    info.model = _text(values.get(PropertyIdentifier.MODEL_NAME))
    apdu = values.get(PropertyIdentifier.MAX_APDU_LENGTH_ACCEPTED)
    info.max_apdu = apdu if isinstance(apdu, int) else None
    segmentation = values.get(PropertyIdentifier.SEGMENTATION_SUPPORTED)
    if isinstance(segmentation, int) and segmentation in {s.value for s in Segmentation}:
        info.segmentation = Segmentation(segmentation).name.lower()
    services = raw.get(PropertyIdentifier.PROTOCOL_SERVICES_SUPPORTED)
    info.cov = services is not None and _bit(services, SUBSCRIBE_COV_BIT)


async def _read_objects(
    started: StartedClient, oids: list[ObjectIdentifier], wait: float
) -> list[ObjectInfo]:
    refs = [PropertyReference(p) for p in PROBED]
    refs.append(PropertyReference(PropertyIdentifier.PRIORITY_ARRAY, 0))
    specs = [ReadAccessSpecification(oid, refs) for oid in oids]
    found = await _read(started, specs, wait)
    objects = []
    for oid in oids:
        raw = found.get(oid, {})
        info = ObjectInfo(oid, properties=[property_name(p) for p in PROBED if p in raw])
        info.name = _text(_decoded(raw.get(PropertyIdentifier.OBJECT_NAME)))
        info.commandable = PropertyIdentifier.PRIORITY_ARRAY in raw
        states = _decoded(raw.get(PropertyIdentifier.NUMBER_OF_STATES))
        info.states = states if isinstance(states, int) and not isinstance(states, bool) else None
        value = raw.get(PropertyIdentifier.PRESENT_VALUE)
        if value is not None:
            info.datatype = _datatype(value)
            info.value = _decoded(value)
        objects.append(info)
    return objects


def cov_candidates(info: DeviceInfo) -> list[ObjectIdentifier]:
    """The objects to try a COV subscription on: the first object with a present value of
    each type, in the object-list's order, at most :data:`COV_TRIES`."""
    firsts: dict[int, ObjectIdentifier] = {}
    for obj in info.objects:
        if obj.datatype is not None:
            firsts.setdefault(int(obj.oid.object_type), obj.oid)
    return list(firsts.values())[:COV_TRIES]


async def place_cov(started: StartedClient, info: DeviceInfo, wait: float) -> None:
    """Find an object that accepts a COV subscription (:attr:`DeviceInfo.cov_object`), or
    record the refusals; a timeout or a lost device is an :class:`OpError`."""
    client = started.client
    for oid in cov_candidates(info):
        started.refresh()
        try:
            async with asyncio.timeout(wait + 1.0):
                await client.subscribe_cov_ex(
                    started.device,
                    oid,
                    COV_PROCESS_ID,
                    confirmed=False,
                    lifetime=COV_TRIAL_LIFETIME,
                    timeout=wait,
                )
        except Exception as exc:
            error = from_exception(exc)
            if error.error_class is not ErrorClass.PROTOCOL:
                raise OpError(
                    error.error_class, f"subscribe-cov {object_name(oid)}: {error.detail}"
                ) from exc
            info.cov_refusals.append((oid, error.code or error.detail))
            continue
        info.cov_object = oid
        with contextlib.suppress(Exception):
            async with asyncio.timeout(wait + 1.0):
                await client.unsubscribe_cov_ex(started.device, oid, COV_PROCESS_ID, timeout=wait)
        return


def _decoded(raw: bytes | None) -> object:
    if raw is None:
        return None
    try:
        return decode_value(raw)
    except (ValueError, IndexError):
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _datatype(raw: bytes) -> str:
    """The datatype of one application-tagged value (``other`` for the rest)."""
    try:
        tag, _ = decode_tag(raw, 0)
    except (ValueError, IndexError):
        return "other"
    if tag.cls != TagClass.APPLICATION:
        return "other"
    return DATATYPES.get(tag.number, "other")


def _bit(raw: bytes, bit: int) -> bool:
    """Bit ``bit`` of an application-tagged BIT STRING."""
    try:
        tag, offset = decode_tag(raw, 0)
    except (ValueError, IndexError):
        return False
    data = raw[offset + 1 : offset + tag.length]
    byte = bit // 8
    return byte < len(data) and bool(data[byte] & (0x80 >> (bit % 8)))
