"""The BACnet/IP codec: pre-encoded requests decode as asked; replies are checked fully."""

from __future__ import annotations

import pytest
from bac_py.encoding.apdu import (
    AbortPDU,
    ComplexAckPDU,
    ConfirmedRequestPDU,
    ErrorPDU,
    RejectPDU,
    SimpleAckPDU,
    decode_apdu,
    encode_apdu,
)
from bac_py.encoding.primitives import (
    encode_application_character_string,
    encode_application_enumerated,
    encode_application_object_id,
    encode_application_real,
    encode_application_unsigned,
)
from bac_py.network.npdu import decode_npdu
from bac_py.services.read_property import ReadPropertyACK, ReadPropertyRequest
from bac_py.services.read_property_multiple import (
    ReadAccessResult,
    ReadPropertyMultipleACK,
    ReadResultElement,
)
from bac_py.services.write_property import WritePropertyRequest
from bac_py.transport.bvll import decode_bvll
from bac_py.types.enums import (
    AbortReason,
    BvlcFunction,
    ErrorCode,
    ObjectType,
    PropertyIdentifier,
    RejectReason,
)
from bac_py.types.enums import (
    ErrorClass as BacnetErrorClass,
)
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.codec import (
    ArrayElementsRequest,
    DeviceProbe,
    ObjectListRequest,
    ReadMultipleRequest,
    ReadRequest,
    WriteRequest,
    check_tags,
    decode_value,
    encode_write_value,
    same_value,
)
from protobench.protocols.bacnet_ip.link import Path, Route
from protobench.protocols.bacnet_ip.segments import MAX_SEGMENTS
from protobench.vocab.errors import ErrorClass

AI1 = ObjectIdentifier(ObjectType.ANALOG_INPUT, 1)
AI2 = ObjectIdentifier(ObjectType.ANALOG_INPUT, 2)
NC1 = ObjectIdentifier(ObjectType.NOTIFICATION_CLASS, 1)
RECIPIENTS = PropertyIdentifier.RECIPIENT_LIST
PV = PropertyIdentifier.PRESENT_VALUE
READ_PROPERTY = 12
RPM = 14
WRITE_PROPERTY = 15


def complex_ack(service: int, ack: bytes, invoke_id: int = 0) -> bytes:
    return encode_apdu(ComplexAckPDU(False, False, invoke_id, None, None, service, ack))


def rp_ack(
    oid: ObjectIdentifier, prop: PropertyIdentifier, value: bytes, invoke_id: int = 0
) -> bytes:
    return complex_ack(READ_PROPERTY, ReadPropertyACK(oid, prop, None, value).encode(), invoke_id)


def decoded_request(request: ReadRequest | WriteRequest, invoke_id: int) -> ConfirmedRequestPDU:
    message = decode_bvll(request.head + bytes((invoke_id,)) + request.tail)
    assert message.function == BvlcFunction.ORIGINAL_UNICAST_NPDU
    npdu = decode_npdu(message.data)
    assert npdu.expecting_reply
    pdu = decode_apdu(npdu.apdu)
    assert isinstance(pdu, ConfirmedRequestPDU)
    return pdu


def test_request_carries_its_invoke_id_and_decodes_as_asked() -> None:
    request = ReadRequest(AI1, PV, None)
    for invoke_id in (0, 7, 255):
        pdu = decoded_request(request, invoke_id)
        assert pdu.invoke_id == invoke_id
        assert pdu.service_choice == READ_PROPERTY
        assert pdu.segmented_response_accepted
        assert pdu.max_segments == MAX_SEGMENTS
        assert ReadPropertyRequest.decode(pdu.service_request) == ReadPropertyRequest(AI1, PV)


def test_request_buffer_with_an_invoke_id_set_is_the_datagram() -> None:
    request = ReadRequest(AI1, PV, None)
    for invoke_id in (7, 0, 255):
        request.wire[request.at] = invoke_id
        assert bytes(request.wire) == request.head + bytes((invoke_id,)) + request.tail
    assert decoded_request(request, 255).invoke_id == 255


def test_routed_request_names_the_remote_network_and_mac() -> None:
    mac = bytes.fromhex("7f000001bac1")
    request = WriteRequest(AI1, PV, encode_application_real(72.5), 8, Path(Route(2, mac)), "w")
    npdu = decode_npdu(decode_bvll(request.head + b"\x05" + request.tail).data)
    assert npdu.destination is not None
    assert (npdu.destination.network, npdu.destination.mac_address) == (2, mac)
    write = WritePropertyRequest.decode(decode_apdu(npdu.apdu).service_request)  # type: ignore[union-attr]
    assert (write.priority, decode_value(write.property_value)) == (8, 72.5)


def test_read_accepts_the_right_value_and_rejects_a_wrong_one() -> None:
    request = ReadRequest(AI1, PV, None, expect=61.5)
    assert request.accept(rp_ack(AI1, PV, encode_application_real(61.5)), 0) is None
    assert request.value == 61.5
    again = request.accept(rp_ack(AI1, PV, encode_application_real(61.5)), 0)
    assert again is None
    error = request.accept(rp_ack(AI1, PV, encode_application_real(61.0)), 0)
    assert error is not None
    assert error.error_class == ErrorClass.VALIDATION
    assert "expected 61.5" in error.detail


def test_read_takes_the_reply_accepted_last_as_is_and_checks_any_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = ReadRequest(AI1, PV, None, expect=61.5)
    header = b"\x81\x0a\x00\x00\x01\x00"
    checked: list[bytes] = []
    check_raw = ReadRequest._check_raw

    def spy(self: ReadRequest, raw: bytes) -> object:
        checked.append(raw)
        return check_raw(self, raw)

    monkeypatch.setattr(ReadRequest, "_check_raw", spy)
    right = encode_application_real(61.5)
    assert request.accept(header + rp_ack(AI1, PV, right, invoke_id=3), 6) is None
    assert checked == [right]
    assert request.accept(header + rp_ack(AI1, PV, right, invoke_id=9), 6) is None
    assert request.accept(rp_ack(AI1, PV, right, invoke_id=200), 0) is None
    assert checked == [right]
    wrong = encode_application_real(61.0)
    error = request.accept(header + rp_ack(AI1, PV, wrong, invoke_id=4), 6)
    assert error is not None
    assert error.error_class == ErrorClass.VALIDATION
    assert checked == [right, wrong]
    longer = encode_application_unsigned(61_000)
    assert request.accept(header + rp_ack(AI1, PV, longer, invoke_id=5), 6) is not None
    other_object = request.accept(header + rp_ack(AI2, PV, right, invoke_id=6), 6)
    assert other_object is not None
    assert "analog-input:2" in other_object.detail
    assert request.accept(header + rp_ack(AI1, PV, right, invoke_id=7), 6) is None
    assert checked == [right, wrong, longer]


def test_read_rejects_an_ack_for_another_object_or_service() -> None:
    request = ReadRequest(AI1, PV, None)
    error = request.accept(rp_ack(AI2, PV, encode_application_real(63.0)), 0)
    assert error is not None
    assert error.error_class == ErrorClass.VALIDATION
    assert "analog-input:2" in error.detail
    wrong_service = complex_ack(RPM, ReadPropertyACK(AI1, PV, None, b"").encode())
    assert request.accept(wrong_service, 0).error_class == ErrorClass.VALIDATION  # type: ignore[union-attr]
    simple = encode_apdu(SimpleAckPDU(0, READ_PROPERTY))
    assert request.accept(simple, 0).error_class == ErrorClass.VALIDATION  # type: ignore[union-attr]


def test_undecodable_value_is_a_validation_error() -> None:
    request = ReadRequest(AI1, PV, None)
    truncated = rp_ack(AI1, PV, encode_application_real(61.5)[:-2])
    error = request.accept(truncated, 0)
    assert error is not None
    assert error.error_class == ErrorClass.VALIDATION


@pytest.mark.parametrize(
    ("pdu", "code"),
    [
        (
            ErrorPDU(0, READ_PROPERTY, BacnetErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY),
            "property:unknown-property",
        ),
        (
            ErrorPDU(0, READ_PROPERTY, BacnetErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT),
            "object:unknown-object",
        ),
        (RejectPDU(0, RejectReason.UNRECOGNIZED_SERVICE), "reject:unrecognized-service"),
        (
            AbortPDU(True, 0, AbortReason.SEGMENTATION_NOT_SUPPORTED),
            "abort:segmentation-not-supported",
        ),
    ],
)
def test_error_reject_abort_are_protocol_errors_with_class_and_code(pdu: object, code: str) -> None:
    error = ReadRequest(AI1, PV, None).accept(encode_apdu(pdu), 0)  # type: ignore[arg-type]
    assert error is not None
    assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, code)
    assert error.detail.startswith("analog-input:1 present-value: BACnet ")


def test_probe_errors_are_labelled_as_the_probe() -> None:
    abort = encode_apdu(AbortPDU(True, 0, AbortReason.SEGMENTATION_NOT_SUPPORTED))
    error = DeviceProbe(4194303, None).accept(abort, 0)
    assert error is not None
    assert error.detail == "object-list probe of device:4194303: BACnet Abort"


def test_write_expects_a_simple_ack_of_its_service() -> None:
    request = WriteRequest(AI1, PV, encode_application_real(1.0), 8, None, "w")
    assert request.accept(encode_apdu(SimpleAckPDU(3, WRITE_PROPERTY)), 0) is None
    assert request.accept(encode_apdu(SimpleAckPDU(3, 16)), 0).error_class == ErrorClass.VALIDATION  # type: ignore[union-attr]
    denied = ErrorPDU(3, WRITE_PROPERTY, BacnetErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED)
    assert request.accept(encode_apdu(denied), 0).code == "property:write-access-denied"  # type: ignore[union-attr]


def rpm_ack(results: list[ReadAccessResult]) -> bytes:
    return complex_ack(RPM, ReadPropertyMultipleACK(results).encode())


def test_read_multiple_checks_objects_properties_and_access_errors() -> None:
    name = PropertyIdentifier.OBJECT_NAME
    request = ReadMultipleRequest([(AI1, [PV, name]), (AI2, [PV])], None)
    good = [
        ReadAccessResult(
            AI1,
            [
                ReadResultElement(PV, None, encode_application_real(61.5)),
                ReadResultElement(name, None, encode_application_character_string("AI-1")),
            ],
        ),
        ReadAccessResult(AI2, [ReadResultElement(PV, None, encode_application_real(63.0))]),
    ]
    assert request.accept(rpm_ack(good), 0) is None
    missing = [
        good[0],
        ReadAccessResult(AI1, [ReadResultElement(PV, None, encode_application_real(1))]),
    ]
    assert request.accept(rpm_ack(missing), 0).error_class == ErrorClass.VALIDATION  # type: ignore[union-attr]
    failed = [
        good[0],
        ReadAccessResult(
            AI2,
            [
                ReadResultElement(
                    PV, None, None, (BacnetErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY)
                )
            ],
        ),
    ]
    error = request.accept(rpm_ack(failed), 0)
    assert error is not None
    assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, "property:unknown-property")


def object_list_value(*oids: ObjectIdentifier) -> bytes:
    return b"".join(encode_application_object_id(o.object_type, o.instance_number) for o in oids)


def test_object_list_must_hold_the_device_and_the_expected_count() -> None:
    device = ObjectIdentifier(ObjectType.DEVICE, 400)
    ol = PropertyIdentifier.OBJECT_LIST
    request = ObjectListRequest(400, None, expect_count=2)
    assert request.accept(rp_ack(device, ol, object_list_value(device, AI1)), 0) is None
    assert request.objects == [device, AI1]
    short = request.accept(rp_ack(device, ol, object_list_value(device)), 0)
    assert short is not None
    assert "expected 2" in short.detail
    other = request.accept(rp_ack(device, ol, object_list_value(AI1, AI2)), 0)
    assert other is not None
    assert "device itself" in other.detail


def test_probe_learns_the_device_behind_the_wildcard_instance() -> None:
    device = ObjectIdentifier(ObjectType.DEVICE, 551)
    probe = DeviceProbe(4_194_303, None)
    reply = rp_ack(device, PropertyIdentifier.OBJECT_LIST, object_list_value(device, AI1, AI2))
    assert probe.accept(reply, 0) is None
    assert (probe.device, probe.objects) == (device, [device, AI1, AI2])
    not_a_list = rp_ack(AI1, PV, encode_application_real(1.0))
    assert probe.accept(not_a_list, 0).error_class == ErrorClass.VALIDATION  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "datatype", "oid", "encoded"),
    [
        (72.5, "auto", ObjectIdentifier(ObjectType.ANALOG_VALUE, 1), encode_application_real(72.5)),
        (72, "auto", ObjectIdentifier(ObjectType.ANALOG_VALUE, 1), encode_application_real(72.0)),
        (
            True,
            "auto",
            ObjectIdentifier(ObjectType.BINARY_VALUE, 1),
            encode_application_enumerated(1),
        ),
        (1, "auto", ObjectIdentifier(ObjectType.BINARY_VALUE, 1), encode_application_enumerated(1)),
        (
            2,
            "auto",
            ObjectIdentifier(ObjectType.MULTI_STATE_VALUE, 1),
            encode_application_unsigned(2),
        ),
        (
            "x",
            "auto",
            ObjectIdentifier(ObjectType.ANALOG_VALUE, 1),
            encode_application_character_string("x"),
        ),
        (
            3,
            "enumerated",
            ObjectIdentifier(ObjectType.ANALOG_VALUE, 1),
            encode_application_enumerated(3),
        ),
    ],
)
def test_write_values_are_encoded_by_type(
    value: object, datatype: str, oid: ObjectIdentifier, encoded: bytes
) -> None:
    assert encode_write_value(value, datatype, oid, PV) == encoded  # type: ignore[arg-type]


def test_write_value_that_does_not_fit_its_type_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot write"):
        encode_write_value(2.5, "unsigned", AI1, PV)
    with pytest.raises(ValueError, match="cannot write"):
        encode_write_value("text", "real", AI1, PV)


def test_values_compare_as_32_bit_reals() -> None:
    assert same_value(decode_value(encode_application_real(0.1)), 0.1)
    assert not same_value(decode_value(encode_application_real(0.1)), 0.2)
    assert same_value(1, True)
    assert not same_value(2, True)


def test_constructed_values_are_checked_tag_by_tag() -> None:
    constructed = b"\x0e\x21\x05\x0f"  # opening tag 0, unsigned 5, closing tag 0
    assert decode_value(constructed) == constructed
    with pytest.raises(ValueError, match="truncated"):
        check_tags(b"\x0e\x21\x05")
    with pytest.raises(ValueError, match="unbalanced"):
        check_tags(b"\x0e\x21\x05\x1f")


def test_an_empty_list_is_a_value() -> None:
    assert decode_value(b"") == []
    request = ReadRequest(NC1, RECIPIENTS, None)
    assert request.accept(rp_ack(NC1, RECIPIENTS, b""), 0) is None
    assert request.value == []


def test_read_multiple_all_accepts_the_properties_the_object_has() -> None:
    name = PropertyIdentifier.OBJECT_NAME
    request = ReadMultipleRequest(
        [(AI1, [PropertyIdentifier.ALL]), (NC1, [RECIPIENTS]), (AI2, [PV])], None
    )
    denied = (BacnetErrorClass.PROPERTY, ErrorCode.READ_ACCESS_DENIED)
    results = [
        ReadAccessResult(
            AI1,
            [
                ReadResultElement(PV, None, encode_application_real(61.5)),
                ReadResultElement(name, None, encode_application_character_string("AI-1")),
                ReadResultElement(PropertyIdentifier.PROFILE_NAME, None, None, denied),
            ],
        ),
        ReadAccessResult(NC1, [ReadResultElement(RECIPIENTS, None, b"")]),
        ReadAccessResult(AI2, [ReadResultElement(PV, None, encode_application_real(63.0))]),
    ]
    assert request.accept(rpm_ack(results), 0) is None
    # A named property still has to come back as asked.
    results[2] = ReadAccessResult(AI2, [ReadResultElement(name, None, b"")])
    error = request.accept(rpm_ack(results), 0)
    assert error is not None
    assert error.detail.endswith("ACK lists other properties of analog-input:2")


def test_rpm_access_error_names_the_object_and_property() -> None:
    request = ReadMultipleRequest([(AI1, [PropertyIdentifier.UNITS])], None)
    unknown = (BacnetErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY)
    results = [
        ReadAccessResult(AI1, [ReadResultElement(PropertyIdentifier.UNITS, None, None, unknown)])
    ]
    error = request.accept(rpm_ack(results), 0)
    assert error is not None
    assert (error.code, error.detail) == (
        "property:unknown-property",
        "analog-input:1 units: property access error",
    )


def test_probe_of_element_zero_learns_the_device_and_the_length() -> None:
    device = ObjectIdentifier(ObjectType.DEVICE, 1234)
    probe = DeviceProbe(4194303, None, array_index=0)
    ack = ReadPropertyACK(
        device, PropertyIdentifier.OBJECT_LIST, 0, encode_application_unsigned(413)
    ).encode()
    assert probe.accept(complex_ack(READ_PROPERTY, ack), 0) is None
    assert (probe.device, probe.length) == (device, 413)


def test_array_elements_come_back_in_order() -> None:
    device = ObjectIdentifier(ObjectType.DEVICE, 1234)
    olist = PropertyIdentifier.OBJECT_LIST
    request = ArrayElementsRequest(device, olist, 1, 2, None)
    elements = [
        ReadResultElement(olist, 1, encode_application_object_id(ObjectType.DEVICE, 1234)),
        ReadResultElement(olist, 2, encode_application_object_id(ObjectType.ANALOG_INPUT, 1)),
    ]
    assert request.accept(rpm_ack([ReadAccessResult(device, elements)]), 0) is None
    assert request.values == [device, AI1]
    swapped = [elements[1], elements[0]]
    error = request.accept(rpm_ack([ReadAccessResult(device, swapped)]), 0)
    assert error is not None
    assert error.error_class == ErrorClass.VALIDATION


def test_probe_of_a_device_that_echoes_the_wildcard_finds_it_in_its_list() -> None:
    wildcard = ObjectIdentifier(ObjectType.DEVICE, 4194303)
    device = ObjectIdentifier(ObjectType.DEVICE, 77)
    listed = b"".join(
        encode_application_object_id(o.object_type, o.instance_number) for o in (device, AI1)
    )
    ack = ReadPropertyACK(wildcard, PropertyIdentifier.OBJECT_LIST, None, listed).encode()
    probe = DeviceProbe(4194303, None)
    assert probe.accept(complex_ack(READ_PROPERTY, ack), 0) is None
    assert (probe.device, probe.objects) == (device, [device, AI1])
