"""The virtual link layers' framing, checked byte by byte against bac-py's own decoders."""

from __future__ import annotations

import pytest
from bac_py.network.npdu import decode_npdu
from bac_py.transport.bvll import decode_bvll
from bac_py.transport.bvll_ipv6 import decode_bvll6
from bac_py.types.enums import Bvlc6Function, BvlcFunction, ObjectType, PropertyIdentifier
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.codec import ReadRequest
from protobench.protocols.bacnet_ip.link import (
    IPV6_NPDU_AT,
    SOURCE_VMAC,
    Path,
    Route,
    bvlc_result,
    encode_register_foreign_device,
    encode_to_device,
    encode_virtual_address_resolution,
    is_forwarded,
    resolved_vmac,
    socket_vmac,
)

AI1 = ObjectIdentifier(ObjectType.ANALOG_INPUT, 1)
PV = PropertyIdentifier.PRESENT_VALUE
DEVICE_VMAC = bytes.fromhex("000190")


def test_ipv4_frames_are_annex_j_original_unicasts() -> None:
    wire = encode_to_device(b"\x10\x08", None)
    message = decode_bvll(wire)
    assert message.function == BvlcFunction.ORIGINAL_UNICAST_NPDU
    assert decode_npdu(message.data).apdu == b"\x10\x08"
    assert Path().npdu_at == 4


def test_ipv6_frames_name_both_vmacs_and_the_socket_writes_its_own() -> None:
    request = ReadRequest(AI1, PV, Path(vmac=DEVICE_VMAC))
    request.wire[request.at] = 9
    request.wire[SOURCE_VMAC] = socket_vmac(0xBAC0)
    message = decode_bvll6(bytes(request.wire))
    assert message.function == Bvlc6Function.ORIGINAL_UNICAST_NPDU
    assert (message.source_vmac, message.dest_vmac) == (bytes.fromhex("7ebac0"), DEVICE_VMAC)
    assert decode_npdu(message.data).apdu[2] == 9
    assert Path(vmac=DEVICE_VMAC).npdu_at == IPV6_NPDU_AT == len(request.wire) - len(message.data)


def test_routed_ipv6_frames_carry_dnet_and_any_dadr() -> None:
    sc_node = bytes.fromhex("02cc00000001")
    wire = encode_to_device(b"\x10\x08", Path(Route(2, sc_node), DEVICE_VMAC))
    npdu = decode_npdu(decode_bvll6(wire).data)
    assert npdu.destination is not None
    assert (npdu.destination.network, npdu.destination.mac_address) == (2, sc_node)


def test_client_vmacs_are_their_ports_above_the_device_instances() -> None:
    assert socket_vmac(1) == b"\x7e\x00\x01"
    assert int.from_bytes(socket_vmac(0), "big") > 4_194_303
    assert len({socket_vmac(port) for port in range(1024, 65536)}) == 65536 - 1024


def test_bvlc_messages_of_both_families() -> None:
    ipv4 = decode_bvll(bytes(encode_register_foreign_device(120, ipv6=False)))
    assert (ipv4.function, ipv4.data) == (BvlcFunction.REGISTER_FOREIGN_DEVICE, b"\x00\x78")
    register = encode_register_foreign_device(120, ipv6=True)
    register[SOURCE_VMAC] = b"\x7e\x00\x05"
    ipv6 = decode_bvll6(bytes(register))
    assert (ipv6.function, ipv6.source_vmac, ipv6.data) == (
        Bvlc6Function.REGISTER_FOREIGN_DEVICE,
        b"\x7e\x00\x05",
        b"\x00\x78",
    )
    resolution = decode_bvll6(bytes(encode_virtual_address_resolution()))
    assert resolution.function == Bvlc6Function.VIRTUAL_ADDRESS_RESOLUTION
    assert bvlc_result(bytes.fromhex("810000060030")) == 0x30
    assert bvlc_result(bytes.fromhex("820000090001900050")) == 0x50
    assert bvlc_result(bytes.fromhex("8101000600")) is None


@pytest.mark.parametrize(
    ("data", "vmac"),
    [
        (bytes.fromhex("8207000a0001907e0005"), DEVICE_VMAC),
        (bytes.fromhex("8207000a0001907e0006"), None),  # for another socket
        (bytes.fromhex("8205000a0001907e0005"), None),  # an Address-Resolution-ACK
        (bytes.fromhex("8207000a000190"), None),
    ],
)
def test_a_resolution_ack_gives_the_senders_vmac_to_the_socket_that_asked(
    data: bytes, vmac: bytes | None
) -> None:
    assert resolved_vmac(data, b"\x7e\x00\x05") == vmac


def test_forwarded_npdus_of_both_families() -> None:
    assert is_forwarded(bytes.fromhex("81040010"))
    assert is_forwarded(bytes.fromhex("82080020"))
    assert not is_forwarded(bytes.fromhex("810a0010"))
    assert not is_forwarded(b"\x82")
