"""The one place where BACnet failures become :class:`OpError`.

* An Error PDU (or a property access error inside a ReadPropertyMultiple-ACK)
  is ``protocol`` with code ``<error-class>:<error-code>``, e.g.
  ``property:unknown-property``.
* A Reject PDU is ``protocol`` with code ``reject:<reason>``, an Abort PDU
  ``abort:<reason>``, a BVLC-Result NAK ``bvlc:<result-code>``.
* No reply in time (after the configured retries) is ``timeout``.
* An ICMP port-unreachable on the client's socket is ``refused``.
* A reply that does not match what was asked is ``validation``.
"""

from __future__ import annotations

import enum

from bac_py.encoding.apdu import AbortPDU, ErrorPDU, RejectPDU, decode_apdu
from bac_py.services.errors import (
    BACnetAbortError,
    BACnetError,
    BACnetRejectError,
    BACnetTimeoutError,
)
from bac_py.transport.bip import BvlcNakError

from protobench.vocab.errors import ErrorClass, OpError


def slug(value: enum.Enum | int) -> str:
    """``UNKNOWN_PROPERTY`` -> ``unknown-property``; a value outside the enum -> its number."""
    if isinstance(value, enum.Enum):
        return value.name.lower().replace("_", "-")
    return str(value)


def error_code(error_class: enum.Enum | int, code: enum.Enum | int) -> str:
    return f"{slug(error_class)}:{slug(code)}"


def from_apdu(apdu: bytes, label: str) -> OpError:
    """The error carried by an Error, Reject or Abort PDU (or a validation error).

    ``label`` names what was asked (``analog-input:1 present-value``); the
    message starts with it, so errors of the same code tell their objects apart.
    """
    try:
        pdu = decode_apdu(apdu)
    except (ValueError, IndexError) as exc:
        return OpError(ErrorClass.VALIDATION, f"{label}: undecodable reply: {exc}")
    if isinstance(pdu, ErrorPDU):
        code = error_code(pdu.error_class, pdu.error_code)
        return OpError(ErrorClass.PROTOCOL, f"{label}: BACnet Error", code)
    if isinstance(pdu, RejectPDU):
        reason = f"reject:{slug(pdu.reject_reason)}"
        return OpError(ErrorClass.PROTOCOL, f"{label}: BACnet Reject", reason)
    if isinstance(pdu, AbortPDU):
        reason = f"abort:{slug(pdu.abort_reason)}"
        return OpError(ErrorClass.PROTOCOL, f"{label}: BACnet Abort", reason)
    return OpError(ErrorClass.VALIDATION, f"{label}: unexpected reply {type(pdu).__name__}")


def from_exception(exc: BaseException) -> OpError:
    """Map an exception raised by bac-py's client (or the socket under it)."""
    if isinstance(exc, OpError):
        return exc
    if isinstance(exc, BACnetError):
        code = error_code(exc.error_class, exc.error_code)
        return OpError(ErrorClass.PROTOCOL, "BACnet Error", code)
    if isinstance(exc, BACnetRejectError):
        return OpError(ErrorClass.PROTOCOL, "BACnet Reject", f"reject:{slug(exc.reason)}")
    if isinstance(exc, BACnetAbortError):
        return OpError(ErrorClass.PROTOCOL, "BACnet Abort", f"abort:{slug(exc.reason)}")
    if isinstance(exc, BvlcNakError):
        return OpError(ErrorClass.PROTOCOL, "BVLC NAK", f"bvlc:{exc.result_code:#06x}")
    if isinstance(exc, BACnetTimeoutError | TimeoutError):
        return OpError(ErrorClass.TIMEOUT, str(exc) or "no reply in time")
    if isinstance(exc, ConnectionRefusedError):
        return OpError(ErrorClass.REFUSED, "ICMP port unreachable")
    if isinstance(exc, OSError):
        return OpError(ErrorClass.CONNECT, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, ValueError):
        return OpError(ErrorClass.VALIDATION, f"undecodable reply: {exc}")
    return OpError(ErrorClass.LOCAL, f"{type(exc).__name__}: {exc}")
