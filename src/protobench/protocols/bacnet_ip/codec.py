"""Pre-encoded BACnet/IP requests and the full check of their replies (no I/O).

A :class:`Request` is encoded once with bac-py's codec (BVLL Original-Unicast
+ NPDU + confirmed-request APDU) and kept as the bytes before and after the
invoke ID, and as one datagram buffer whose invoke ID byte the client sets
before each send (no allocation per request). Its :meth:`Request.accept`
checks a reply APDU completely:

* the PDU type and service choice must be the ones asked for;
* ReadProperty: the ACK's object, property and array index must equal the
  request byte for byte (BACnet encodings are canonical), the value between
  the opening and closing tag 3 is decoded by bac-py and compared with the
  expected value when one is set; a reply identical to the last one accepted
  after its invoke ID is not decoded again (its decoding is known);
* ReadPropertyMultiple: bac-py decodes the whole ACK; every object and
  property must be the ones asked for, in order, and every value must decode;
  a property access error is a ``protocol`` error with its class:code;
* Error, Reject and Abort PDUs become ``protocol`` errors
  (:mod:`~protobench.protocols.bacnet_ip.errors`).

Requests that expect a ComplexACK accept segmented replies (up to
:data:`~protobench.protocols.bacnet_ip.segments.MAX_SEGMENTS` segments); the
client reassembles them before the check. A device that cannot segment
answers a reply too big for one APDU with ``abort:segmentation-not-supported``.

Every error message starts with the request's label: the object and property
(or the objects of an RPM/WPM), so a report tells failing objects apart.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from bac_py.encoding.apdu import ConfirmedRequestPDU, encode_apdu
from bac_py.encoding.primitives import (
    decode_all_application_values,
    encode_application_boolean,
    encode_application_character_string,
    encode_application_double,
    encode_application_enumerated,
    encode_application_null,
    encode_application_real,
    encode_application_signed,
    encode_application_unsigned,
)
from bac_py.encoding.tags import TagClass, decode_tag
from bac_py.services.common import BACnetPropertyValue
from bac_py.services.read_property import ReadPropertyACK, ReadPropertyRequest
from bac_py.services.read_property_multiple import (
    PropertyReference,
    ReadAccessSpecification,
    ReadPropertyMultipleACK,
    ReadPropertyMultipleRequest,
)
from bac_py.services.write_property import WritePropertyRequest
from bac_py.services.write_property_multiple import (
    WriteAccessSpecification,
    WritePropertyMultipleRequest,
)
from bac_py.types.enums import (
    ConfirmedServiceChoice,
    ObjectType,
    PropertyIdentifier,
)
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.errors import error_code, from_apdu
from protobench.protocols.bacnet_ip.link import Path, encode_to_device
from protobench.protocols.bacnet_ip.objects import device_in, object_name, property_name
from protobench.protocols.bacnet_ip.segments import MAX_SEGMENTS
from protobench.vocab.errors import ErrorClass, OpError

MAX_APDU = 1476
INVOKE_IDS = 256
INVOKE_ID_BYTES = tuple(bytes((i,)) for i in range(INVOKE_IDS))
"""The invoke ID byte of a datagram, ready to concatenate."""
_CLOSING_TAG_3 = 0x3F
_COMPLEX_ACK_HEAD = 0x30
_SIMPLE_ACK_HEAD = 0x20
_COMPLEX_ACK = 0x3
_SIMPLE_ACK = 0x2
_SEGMENTED = 0x08

_SPECIAL_PROPERTIES = frozenset(
    {PropertyIdentifier.ALL, PropertyIdentifier.REQUIRED, PropertyIdentifier.OPTIONAL}
)
"""Properties that stand for several: an RPM ACK lists the object's own properties instead."""

Scalar = bool | int | float | str
WriteValue = Scalar | None


def encode_confirmed(
    service: int, request: bytes, path: Path | None, segments: bool = False
) -> tuple[bytes, bytes]:
    """The datagram of a confirmed request, split around its invoke ID byte.

    ``segments``: the request accepts a segmented reply.
    """
    apdu = encode_apdu(
        ConfirmedRequestPDU(
            segmented=False,
            more_follows=False,
            segmented_response_accepted=segments,
            max_segments=MAX_SEGMENTS if segments else None,
            max_apdu_length=MAX_APDU,
            invoke_id=0,
            sequence_number=None,
            proposed_window_size=None,
            service_choice=service,
            service_request=request,
        )
    )
    wire = encode_to_device(apdu, path, expecting_reply=True)
    at = len(wire) - len(apdu) + 2
    return wire[:at], wire[at + 1 :]


def check_tags(raw: bytes) -> None:
    """Walk tagged BACnet data; ``ValueError`` unless every tag is complete and balanced."""
    stack: list[int] = []
    offset = 0
    while offset < len(raw):
        tag, offset = decode_tag(raw, offset)
        if tag.is_opening:
            stack.append(tag.number)
        elif tag.is_closing:
            if not stack or stack.pop() != tag.number:
                raise ValueError(f"unbalanced closing tag {tag.number}")
        elif not (tag.cls == TagClass.APPLICATION and tag.number == 1):
            offset += tag.length
    if stack or offset != len(raw):
        raise ValueError("truncated value")


def decode_value(raw: bytes) -> object:
    """A property value: application-tagged values decoded (one value unwrapped);
    a constructed value is checked tag by tag and returned as bytes; nothing
    is an empty list (``recipient-list``, ``active-cov-subscriptions``...)."""
    if not raw:
        return []
    try:
        values = decode_all_application_values(raw)
    except ValueError:
        check_tags(raw)
        return raw
    if len(values) == 1:
        return values[0]
    return values


def same_value(value: object, expected: Scalar) -> bool:
    """Equality of a decoded value with an expected one (floats as REAL, 32 bits)."""
    if (
        isinstance(value, float)
        and isinstance(expected, int | float)
        and not isinstance(expected, bool)
    ):
        as_real: float = struct.unpack("!f", struct.pack("!f", float(expected)))[0]
        return value == as_real
    if isinstance(value, bool) or isinstance(expected, bool):
        return isinstance(value, bool | int) and bool(value) == bool(expected) and value in (0, 1)
    return value == expected


class Request:
    """A pre-encoded confirmed request and the check of its reply."""

    __slots__ = ("at", "head", "label", "service", "simple", "tail", "wire")

    def __init__(
        self, service: int, request: bytes, path: Path | None, label: str, simple: bool
    ) -> None:
        self.head, self.tail = encode_confirmed(service, request, path, segments=not simple)
        self.wire = bytearray(self.head + INVOKE_ID_BYTES[0] + self.tail)
        """The datagram; the sender sets ``wire[at]`` to the invoke ID and sends it at once."""
        self.at = len(self.head)
        self.service = service
        self.simple = simple
        self.label = label

    def accept(self, data: bytes, start: int) -> OpError | None:
        """Check the reply APDU at ``data[start:]``; ``None`` when it is right."""
        first = data[start]
        if first == _SIMPLE_ACK_HEAD and self.simple and data[start + 2] == self.service:
            return None
        kind = first >> 4
        if kind == _COMPLEX_ACK and not self.simple:
            if first & _SEGMENTED:
                return OpError(
                    ErrorClass.VALIDATION, f"{self.label}: segmented reply was not accepted"
                )
            if data[start + 2] != self.service:
                return self._wrong_service(data[start + 2])
            return self.check_ack(data, start + 3)
        if kind == _SIMPLE_ACK and self.simple:
            if data[start + 2] != self.service:
                return self._wrong_service(data[start + 2])
            return None
        if kind in (_COMPLEX_ACK, _SIMPLE_ACK):
            return OpError(ErrorClass.VALIDATION, f"{self.label}: wrong kind of acknowledgement")
        return from_apdu(data[start:], self.label)

    def check_ack(self, data: bytes, start: int) -> OpError | None:
        """Check the service ACK at ``data[start:]`` (ComplexACK requests override this)."""
        return None

    def _wrong_service(self, service: int) -> OpError:
        return OpError(
            ErrorClass.VALIDATION, f"{self.label}: reply for service {service}, not {self.service}"
        )


class ReadRequest(Request):
    """ReadProperty of one property, optionally checked against an expected value."""

    __slots__ = ("_ok_end", "_ok_raw", "_ok_size", "body", "expect", "prefix", "value")

    def __init__(
        self,
        oid: ObjectIdentifier,
        prop: PropertyIdentifier,
        path: Path | None,
        array_index: int | None = None,
        expect: Scalar | None = None,
    ) -> None:
        request = ReadPropertyRequest(oid, prop, array_index)
        super().__init__(
            ConfirmedServiceChoice.READ_PROPERTY,
            request.encode(),
            path,
            f"{object_name(oid)} {property_name(prop)}"
            + ("" if array_index is None else f"[{array_index}]"),
            simple=False,
        )
        self.prefix = ReadPropertyACK(oid, prop, array_index, b"").encode()[:-1]
        self.body = 3 + len(self.prefix)
        self.expect = expect
        self.value: object = None
        self._ok_raw: bytes | None = None
        self._ok_end = b""
        """The last reply accepted, after its invoke ID (service, object, property, value)."""
        self._ok_size = -1
        """The size of that reply's APDU (-1 before the first: matches no reply)."""

    def accept(self, data: bytes, start: int) -> OpError | None:
        # The commonest case first: the reply accepted last time, under another invoke ID.
        if (
            len(data) - start == self._ok_size
            and data[start] == _COMPLEX_ACK_HEAD
            and data.endswith(self._ok_end)
        ):
            return None
        # Then a ComplexACK of ReadProperty for this object and property.
        if (
            data[start] == _COMPLEX_ACK_HEAD
            and data[start + 2] == self.service
            and data[-1] == _CLOSING_TAG_3
            and data.startswith(self.prefix, start + 3)
        ):
            raw = data[start + self.body : -1]
            error = None if raw == self._ok_raw else self._check_raw(raw)
            if error is None:
                self._ok_end = data[start + 2 :]
                self._ok_size = len(data) - start
            return error
        return super().accept(data, start)

    def check_ack(self, data: bytes, start: int) -> OpError | None:
        body = start + len(self.prefix)
        if (
            len(data) <= body
            or data[-1] != _CLOSING_TAG_3
            or not data.startswith(self.prefix, start)
        ):
            return self._mismatch(data[start:])
        return self._check_raw(data[body:-1])

    def _check_raw(self, raw: bytes) -> OpError | None:
        """Decode and check a value other than the last one accepted."""
        try:
            value = decode_value(raw)
        except (ValueError, IndexError) as exc:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: undecodable value: {exc}")
        problem = self.check_value(value)
        if problem is not None:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: {problem}")
        self.value = value
        self._ok_raw = raw
        return None

    def check_value(self, value: object) -> str | None:
        """Why ``value`` is wrong, or ``None``."""
        if self.expect is not None and not same_value(value, self.expect):
            return f"read {value!r}, expected {self.expect!r}"
        return None

    def _mismatch(self, ack: bytes) -> OpError:
        try:
            got = ReadPropertyACK.decode(ack)
        except (ValueError, IndexError) as exc:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: undecodable ACK: {exc}")
        return OpError(
            ErrorClass.VALIDATION,
            f"{self.label}: ACK is for {object_name(got.object_identifier)} "
            f"{property_name(got.property_identifier)} index {got.property_array_index}",
        )


class ObjectListRequest(ReadRequest):
    """ReadProperty of a device's object-list: a list of object identifiers."""

    __slots__ = ("device", "expect_count", "objects")

    def __init__(self, device: int, path: Path | None, expect_count: int | None = None) -> None:
        super().__init__(
            ObjectIdentifier(ObjectType.DEVICE, device), PropertyIdentifier.OBJECT_LIST, path
        )
        self.device = ObjectIdentifier(ObjectType.DEVICE, device)
        self.expect_count = expect_count
        self.objects: list[ObjectIdentifier] = []

    def check_value(self, value: object) -> str | None:
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(item, ObjectIdentifier) for item in items):
            return "object-list holds something else than object identifiers"
        if self.device not in items:
            return "object-list does not contain the device itself"
        if self.expect_count is not None and len(items) != self.expect_count:
            return f"object-list has {len(items)} objects, expected {self.expect_count}"
        self.objects = [item for item in items if isinstance(item, ObjectIdentifier)]
        return None


class ReadMultipleRequest(Request):
    """ReadPropertyMultiple of several objects and properties."""

    __slots__ = ("_ok_payload", "asked")

    def __init__(
        self,
        specs: Sequence[tuple[ObjectIdentifier, Sequence[PropertyIdentifier]]],
        path: Path | None,
    ) -> None:
        request = ReadPropertyMultipleRequest(
            [
                ReadAccessSpecification(oid, [PropertyReference(prop) for prop in props])
                for oid, props in specs
            ]
        )
        label = "rpm " + ",".join(object_name(oid) for oid, _ in specs)
        super().__init__(
            ConfirmedServiceChoice.READ_PROPERTY_MULTIPLE,
            request.encode(),
            path,
            label,
            simple=False,
        )
        self.asked = [(oid, list(props)) for oid, props in specs]
        self._ok_payload: bytes | None = None

    def check_ack(self, data: bytes, start: int) -> OpError | None:
        payload = data[start:]
        if payload == self._ok_payload:
            return None
        try:
            ack = ReadPropertyMultipleACK.decode(payload)
        except (ValueError, IndexError) as exc:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: undecodable ACK: {exc}")
        results = ack.list_of_read_access_results
        if [r.object_identifier for r in results] != [oid for oid, _ in self.asked]:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: ACK lists other objects")
        for result, (oid, props) in zip(results, self.asked, strict=True):
            error = self._check_result(oid, props, result.list_of_results)
            if error is not None:
                return error
        self._ok_payload = payload
        return None

    def _check_result(
        self, oid: ObjectIdentifier, props: list[PropertyIdentifier], elements: list[Any]
    ) -> OpError | None:
        """Check one object's results.

        ``all``, ``required`` and ``optional`` are answered with the properties
        the object has (clause 15.7.3.1.2), each with its value or its own
        access error (a property the device will not read out): any list of
        them is right as long as every value decodes. Named properties must
        come back in the order asked, and an access error is the reply's error.
        """
        if _SPECIAL_PROPERTIES.isdisjoint(props):
            if [e.property_identifier for e in elements] != props:
                return OpError(
                    ErrorClass.VALIDATION,
                    f"{self.label}: ACK lists other properties of {object_name(oid)}",
                )
            for element in elements:
                if element.property_access_error is not None:
                    error_class, code = element.property_access_error
                    return OpError(
                        ErrorClass.PROTOCOL,
                        f"{object_name(oid)} {property_name(element.property_identifier)}: "
                        "property access error",
                        error_code(error_class, code),
                    )
        for element in elements:
            if element.property_access_error is None:
                try:
                    decode_value(element.property_value or b"")
                except (ValueError, IndexError) as exc:
                    where = f"{object_name(oid)} {property_name(element.property_identifier)}"
                    return OpError(
                        ErrorClass.VALIDATION, f"{self.label}: {where}: undecodable value: {exc}"
                    )
        return None


class WriteRequest(Request):
    """WriteProperty of one value, acknowledged by a SimpleACK."""

    __slots__ = ()

    def __init__(
        self,
        oid: ObjectIdentifier,
        prop: PropertyIdentifier,
        value: bytes,
        priority: int | None,
        path: Path | None,
        label: str,
    ) -> None:
        request = WritePropertyRequest(oid, prop, value, None, priority)
        super().__init__(
            ConfirmedServiceChoice.WRITE_PROPERTY, request.encode(), path, label, simple=True
        )


class WriteMultipleRequest(Request):
    """WritePropertyMultiple of several values, acknowledged by a SimpleACK."""

    __slots__ = ()

    def __init__(
        self,
        specs: Sequence[tuple[ObjectIdentifier, Sequence[tuple[PropertyIdentifier, bytes]]]],
        priority: int | None,
        path: Path | None,
    ) -> None:
        request = WritePropertyMultipleRequest(
            [
                WriteAccessSpecification(
                    oid,
                    [BACnetPropertyValue(prop, None, value, priority) for prop, value in values],
                )
                for oid, values in specs
            ]
        )
        label = "wpm " + ",".join(object_name(oid) for oid, _ in specs)
        super().__init__(
            ConfirmedServiceChoice.WRITE_PROPERTY_MULTIPLE,
            request.encode(),
            path,
            label,
            simple=True,
        )


_ANALOG = frozenset({ObjectType.ANALOG_INPUT, ObjectType.ANALOG_OUTPUT, ObjectType.ANALOG_VALUE})
_BINARY = frozenset({ObjectType.BINARY_INPUT, ObjectType.BINARY_OUTPUT, ObjectType.BINARY_VALUE})
_VALUE_PROPERTIES = frozenset(
    {PropertyIdentifier.PRESENT_VALUE, PropertyIdentifier.RELINQUISH_DEFAULT}
)


def encode_write_value(
    value: WriteValue, datatype: str, oid: ObjectIdentifier, prop: PropertyIdentifier
) -> bytes:
    """The application-tagged encoding of a value to write.

    ``datatype`` is one of ``auto``, ``null``, ``boolean``, ``unsigned``,
    ``signed``, ``real``, ``double``, ``enumerated``, ``character-string``.
    ``auto`` picks REAL for numbers written to an analog object's value,
    ENUMERATED for booleans and numbers written to a binary object's value,
    UNSIGNED (SIGNED when negative) for other integers, REAL for other floats,
    BOOLEAN for other booleans and CHARACTER STRING for text.
    """
    if datatype == "auto":
        datatype = _auto_datatype(value, oid, prop)
    if datatype == "null" or value is None:
        return encode_application_null()
    if datatype == "character-string":
        return encode_application_character_string(str(value))
    if isinstance(value, str):
        raise ValueError(f"cannot write text {value!r} as {datatype}")
    if datatype == "boolean":
        return encode_application_boolean(bool(value))
    if datatype == "real":
        return encode_application_real(float(value))
    if datatype == "double":
        return encode_application_double(float(value))
    if not float(value).is_integer():
        raise ValueError(f"cannot write {value!r} as {datatype}")
    if datatype == "enumerated":
        return encode_application_enumerated(int(value))
    if datatype == "signed":
        return encode_application_signed(int(value))
    if datatype == "unsigned" and value >= 0:
        return encode_application_unsigned(int(value))
    raise ValueError(f"cannot write {value!r} as {datatype}")


def _auto_datatype(value: WriteValue, oid: ObjectIdentifier, prop: PropertyIdentifier) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "character-string"
    is_value = prop in _VALUE_PROPERTIES
    if is_value and oid.object_type in _BINARY:
        return "enumerated"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float) or (is_value and oid.object_type in _ANALOG):
        return "real"
    return "unsigned" if value >= 0 else "signed"


class DeviceProbe(Request):
    """ReadProperty of the object-list of whichever device answers (instance may be the wildcard).

    After a successful check, ``device`` is the device that answered and
    ``objects`` its object-list; with ``array_index=0``, ``length`` is the
    object-list's length instead (for a device that cannot send it whole).
    """

    __slots__ = ("array_index", "device", "length", "objects")

    def __init__(self, device: int, path: Path | None, array_index: int | None = None) -> None:
        oid = ObjectIdentifier(ObjectType.DEVICE, device)
        request = ReadPropertyRequest(oid, PropertyIdentifier.OBJECT_LIST, array_index)
        index = "" if array_index is None else f"[{array_index}]"
        super().__init__(
            ConfirmedServiceChoice.READ_PROPERTY,
            request.encode(),
            path,
            f"object-list probe of {object_name(oid)}{index}",
            simple=False,
        )
        self.array_index = array_index
        self.device = oid
        self.objects: list[ObjectIdentifier] = []
        self.length = 0

    def check_ack(self, data: bytes, start: int) -> OpError | None:
        try:
            ack = ReadPropertyACK.decode(data[start:])
            value = decode_value(ack.property_value)
        except (ValueError, IndexError) as exc:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: undecodable ACK: {exc}")
        if (
            ack.object_identifier.object_type != ObjectType.DEVICE
            or ack.property_identifier != PropertyIdentifier.OBJECT_LIST
            or ack.property_array_index != self.array_index
        ):
            return OpError(ErrorClass.VALIDATION, f"{self.label}: not a device object-list")
        if self.array_index == 0:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                return OpError(
                    ErrorClass.VALIDATION, f"{self.label}: length {value!r} is not a count"
                )
            self.device = ack.object_identifier
            self.length = value
            return None
        items = value if isinstance(value, list) else [value]
        objects = [item for item in items if isinstance(item, ObjectIdentifier)]
        device = device_in(ack.object_identifier, objects)
        if len(objects) != len(items) or device is None:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: not a device object-list")
        self.device = device
        self.objects = objects
        return None


class ArrayElementsRequest(Request):
    """Elements ``first..last`` of an array property, in one ReadPropertyMultiple.

    After a successful check ``values`` holds the decoded elements in order.
    """

    __slots__ = ("indexes", "oid", "prop", "values")

    def __init__(
        self,
        oid: ObjectIdentifier,
        prop: PropertyIdentifier,
        first: int,
        last: int,
        path: Path | None,
    ) -> None:
        self.oid = oid
        self.prop = prop
        self.indexes = list(range(first, last + 1))
        refs = [PropertyReference(prop, i) for i in self.indexes]
        request = ReadPropertyMultipleRequest([ReadAccessSpecification(oid, refs)])
        super().__init__(
            ConfirmedServiceChoice.READ_PROPERTY_MULTIPLE,
            request.encode(),
            path,
            f"{object_name(oid)} {property_name(prop)}[{first}..{last}]",
            simple=False,
        )
        self.values: list[object] = []

    def check_ack(self, data: bytes, start: int) -> OpError | None:
        try:
            ack = ReadPropertyMultipleACK.decode(data[start:])
        except (ValueError, IndexError) as exc:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: undecodable ACK: {exc}")
        results = ack.list_of_read_access_results
        if len(results) != 1 or results[0].object_identifier != self.oid:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: ACK lists other objects")
        elements = results[0].list_of_results
        if [(e.property_identifier, e.property_array_index) for e in elements] != [
            (self.prop, i) for i in self.indexes
        ]:
            return OpError(ErrorClass.VALIDATION, f"{self.label}: ACK lists other elements")
        values = []
        for element in elements:
            if element.property_access_error is not None:
                error_class, code = element.property_access_error
                return OpError(
                    ErrorClass.PROTOCOL,
                    f"{self.label}: element {element.property_array_index}: access error",
                    error_code(error_class, code),
                )
            try:
                values.append(decode_value(element.property_value or b""))
            except (ValueError, IndexError) as exc:
                return OpError(ErrorClass.VALIDATION, f"{self.label}: undecodable value: {exc}")
        self.values = values
        return None
