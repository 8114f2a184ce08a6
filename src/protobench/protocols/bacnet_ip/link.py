"""The virtual link layers of BACnet/IP (Annex J) and BACnet/IPv6 (Annex U) as the lean
client frames them (no I/O).

A datagram is a BVLL header and an NPDU:

* Annex J (IPv4): ``81 0A LL LL`` + NPDU (Original-Unicast-NPDU, ``LL LL`` the
  datagram's length);
* Annex U (IPv6): ``82 01 LL LL SSSSSS DDDDDD`` + NPDU, where ``SSSSSS`` is
  the sender's 3-byte virtual MAC address (VMAC) and ``DDDDDD`` the
  receiver's. A B/IPv6 node is known on its network by its VMAC, not by its
  IPv6 address and port: a device answers the VMAC it heard a request from,
  at the address it last heard that VMAC at, and may drop a datagram sent to
  another VMAC than its own.

So on BACnet/IPv6 the client learns the first hop's VMAC (the device's, or
its router's) before it sends a request: a Virtual-Address-Resolution
(``82 06 00 07 SSSSSS``) to the device's address, answered with a
Virtual-Address-Resolution-ACK (``82 07 00 0A`` + the device's VMAC + ours),
unicast both ways (no multicast, which loopback does not carry). Each of the
client's sockets has a VMAC of its own, :func:`socket_vmac` of its port
(unique on the host, as the port is), so a device's replies go back to the
socket that asked; requests are encoded once with a placeholder and each
socket writes its VMAC at :data:`SOURCE_VMAC` before it sends.

:class:`Path` says how a request reaches the device: the family's framing
(the first hop's VMAC on IPv6) and, behind a router, the remote network and
MAC (``dnet``/``dadr``: an IPv4 address and port, a B/IPv6 VMAC or a
BACnet/SC VMAC, whatever the remote network is).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from bac_py.network.address import BACnetAddress
from bac_py.network.npdu import NPDU, encode_npdu
from bac_py.transport.bvll import encode_bvll
from bac_py.transport.bvll_ipv6 import encode_bvll6
from bac_py.types.enums import Bvlc6Function, BvlcFunction

BVLC_IPV4 = 0x81
BVLC_IPV6 = 0x82
IPV4_UNICAST = int(BvlcFunction.ORIGINAL_UNICAST_NPDU)
IPV6_UNICAST = int(Bvlc6Function.ORIGINAL_UNICAST_NPDU)
IPV4_NPDU_AT = 4
IPV6_NPDU_AT = 10
"""Where the NPDU starts in an Original-Unicast-NPDU of each family."""
SOURCE_VMAC = slice(4, 7)
"""The sender's VMAC in a B/IPv6 Original-Unicast-NPDU."""
VMACS = slice(4, 10)
"""Both VMACs (sender's, receiver's) of a B/IPv6 Original-Unicast-NPDU."""
VMAC_PREFIX = 0x7E
"""First byte of the clients' VMACs: above the device instances (0..0x3FFFFF), which a
B/IPv6 device may take as its VMAC."""
_PLACEHOLDER = b"\0\0\0"
_VAR_ACK_SIZE = 10


@dataclass(frozen=True)
class Route:
    """The remote network and MAC of a device behind a router."""

    dnet: int
    dadr: bytes


@dataclass(frozen=True)
class Path:
    """How a datagram reaches the device: its framing and, behind a router, the route.

    ``vmac`` is the first hop's VMAC on BACnet/IPv6, ``None`` on BACnet/IP.
    """

    route: Route | None = None
    vmac: bytes | None = None

    @property
    def npdu_at(self) -> int:
        return IPV4_NPDU_AT if self.vmac is None else IPV6_NPDU_AT

    def frame(self, npdu: bytes) -> bytes:
        """An Original-Unicast-NPDU carrying ``npdu`` (on IPv6, with a placeholder source VMAC)."""
        if self.vmac is None:
            return encode_bvll(BvlcFunction.ORIGINAL_UNICAST_NPDU, npdu)
        return encode_bvll6(
            Bvlc6Function.ORIGINAL_UNICAST_NPDU,
            npdu,
            source_vmac=_PLACEHOLDER,
            dest_vmac=self.vmac,
        )


def encode_to_device(apdu: bytes, path: Path | None, expecting_reply: bool = False) -> bytes:
    """The datagram carrying ``apdu`` to the device (``None``: BACnet/IP, straight to it)."""
    path = path or Path()
    route = path.route
    destination = BACnetAddress(route.dnet, route.dadr) if route is not None else None
    npdu = encode_npdu(NPDU(expecting_reply=expecting_reply, destination=destination, apdu=apdu))
    return path.frame(npdu)


def socket_vmac(port: int) -> bytes:
    """The VMAC of a client socket bound to ``port``: unique on the host, as the port is."""
    return bytes((VMAC_PREFIX,)) + port.to_bytes(2, "big")


def encode_register_foreign_device(ttl: int, ipv6: bool) -> bytearray:
    """Register-Foreign-Device with a time-to-live in seconds (on IPv6, the source VMAC a
    placeholder that the sending socket writes)."""
    if not ipv6:
        return bytearray(encode_bvll(BvlcFunction.REGISTER_FOREIGN_DEVICE, struct.pack("!H", ttl)))
    return bytearray(
        encode_bvll6(
            Bvlc6Function.REGISTER_FOREIGN_DEVICE, struct.pack("!H", ttl), source_vmac=_PLACEHOLDER
        )
    )


def encode_virtual_address_resolution() -> bytearray:
    """Virtual-Address-Resolution (the source VMAC a placeholder the sending socket writes):
    the receiver answers with its own VMAC."""
    return bytearray(
        encode_bvll6(Bvlc6Function.VIRTUAL_ADDRESS_RESOLUTION, b"", source_vmac=_PLACEHOLDER)
    )


def resolved_vmac(data: bytes, vmac: bytes) -> bytes | None:
    """The sender's VMAC if ``data`` is a Virtual-Address-Resolution-ACK to ``vmac``."""
    if (
        len(data) == _VAR_ACK_SIZE
        and data[0] == BVLC_IPV6
        and data[1] == Bvlc6Function.VIRTUAL_ADDRESS_RESOLUTION_ACK
        and data[3] == _VAR_ACK_SIZE
        and data[7:10] == vmac
    ):
        return data[4:7]
    return None


def bvlc_result(data: bytes) -> int | None:
    """The result code of a BVLC-Result of either family, else ``None``."""
    if len(data) == 6 and data[:4] == b"\x81\x00\x00\x06":
        return (data[4] << 8) | data[5]
    if len(data) == 9 and data[:4] == b"\x82\x00\x00\x09":
        return (data[7] << 8) | data[8]
    return None


def is_forwarded(data: bytes) -> bool:
    """Whether ``data`` is a Forwarded-NPDU (a broadcast a BBMD passes to its foreign devices)."""
    return len(data) > 1 and (
        (data[0] == BVLC_IPV4 and data[1] == BvlcFunction.FORWARDED_NPDU)
        or (data[0] == BVLC_IPV6 and data[1] == Bvlc6Function.FORWARDED_NPDU)
    )
