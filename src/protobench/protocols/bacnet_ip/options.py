"""What a BACnet/IP profile may say: the protocol options and each operation's parameters.

Objects are selectors (:mod:`~protobench.protocols.bacnet_ip.objects`):
``analog-input:1``, ``ai:1-5``, ``analog-input:*``. Properties are any name
bac-py accepts (``present-value``, ``pv``, ``object-name``...). Both are
checked when the profile is loaded. The defaults reproduce bac-py's stress
benchmarks.
"""

from __future__ import annotations

from typing import Annotated, Literal

from bac_py.types.parsing import parse_property_identifier
from pydantic import AfterValidator, Field, field_validator

from protobench.protocols.bacnet_ip.address import parse_endpoint
from protobench.protocols.bacnet_ip.objects import parse_selector
from protobench.protocols.base import StrictModel
from protobench.vocab.fields import Duration

Scalar = bool | int | float | str
Datatype = Literal[
    "auto",
    "null",
    "boolean",
    "unsigned",
    "signed",
    "real",
    "double",
    "enumerated",
    "character-string",
]


def _check_selector(text: str) -> str:
    parse_selector(text)
    return text


def _check_property(text: str) -> str:
    parse_property_identifier(text)
    return text


ObjectSelector = Annotated[str, AfterValidator(_check_selector)]
Endpoint = Annotated[str, AfterValidator(parse_endpoint)]
PropertyName = Annotated[str, AfterValidator(_check_property)]
Priority = Annotated[int, Field(ge=1, le=16)]
Instance = Annotated[int, Field(ge=0, le=4_194_303)]

WRITE_VALUES: list[Scalar] = [72.5, 68.0]
READABLE = ["analog-input:*", "binary-input:*", "multi-state-input:*"]
RPM_REQUESTS: list[dict[str, list[str]]] = [
    {
        "analog-input:1": ["present-value", "object-name", "units"],
        "analog-input:2": ["present-value", "units"],
    },
    {
        "analog-input:3": ["present-value", "status-flags"],
        "binary-input:1": ["present-value", "object-name"],
    },
    {
        "analog-value:1": ["present-value", "units", "object-name"],
        "analog-value:2": ["present-value"],
    },
    {
        "multi-state-input:1": ["present-value", "number-of-states"],
        "multi-state-input:2": ["present-value", "object-name"],
        "multi-state-input:3": ["present-value"],
    },
    {
        "analog-output:1": ["present-value", "units"],
        "analog-output:2": ["present-value", "object-name", "units"],
    },
]
WPM_REQUESTS: list[dict[str, dict[str, Scalar]]] = [
    {"analog-value:1": {"present-value": 71.0}, "analog-value:2": {"present-value": 72.0}},
    {"analog-value:3": {"present-value": 73.0}, "analog-value:4": {"present-value": 74.0}},
    {"analog-value:1": {"present-value": 68.0}, "analog-value:5": {"present-value": 75.0}},
]


class BacnetIpOptions(StrictModel):
    """Protocol-wide options (the profile's ``[options]`` table)."""

    interface: str | None = None
    """Local address every client socket binds (an ephemeral port); default: the loopback
    address of the target's family, 127.0.0.1 (BACnet/IP) or ::1 (BACnet/IPv6)."""
    broadcast_address: str = "127.255.255.255"
    """Broadcast address given to bac-py's clients on BACnet/IP (never the global broadcast)."""
    multicast_address: str = "ff01::bac0"
    """Multicast group of bac-py's clients on BACnet/IPv6, their broadcast address: by default
    interface-local, a scope the kernel never sends off the host (Annex U's own group,
    ff02::bac0, would go out on the network interface)."""
    retries: int = Field(default=0, ge=0, le=10)
    """Resends of an unanswered confirmed request; the timeout is split over the attempts."""
    reuse_after: Duration = 10.0
    """Seconds before a client reuses an (address, invoke ID) pair; servers answer a reused
    pair within their duplicate window (bac-py: 6 s) with the earlier request's reply.
    0 reuses IDs at once (for responders without duplicate detection)."""
    foreign_device: bool = False
    """Register every client (except FDT/BDT readers) as a foreign device with the BBMD."""
    bbmd: Endpoint | None = None
    """BBMD ``HOST:PORT`` (default: the target, when its URL has ``bbmd=1``)."""
    bbmd_ttl: int = Field(default=120, ge=1, le=65535)
    """Time-to-live of foreign-device registrations in seconds (renewed at half of it)."""


def local_address(options: BacnetIpOptions, ipv6: bool) -> str:
    """The address client sockets bind for a target of that family."""
    if options.interface is not None:
        return options.interface
    return "::1" if ipv6 else "127.0.0.1"


class ReadPropertyParams(StrictModel):
    """``read-property``: ReadProperty of one property of each object in turn."""

    objects: list[ObjectSelector] = Field(default_factory=lambda: list(READABLE), min_length=1)
    property: PropertyName = "present-value"
    array_index: int | None = Field(default=None, ge=0, le=0xFFFFFFFF)
    expect: Scalar | None = None
    """A value every reply must carry (else a ``validation`` error)."""


class WritePropertyParams(StrictModel):
    """``write-property``: WriteProperty of the values in turn to the objects in turn."""

    objects: list[ObjectSelector] = Field(default_factory=lambda: ["analog-value:*"], min_length=1)
    property: PropertyName = "present-value"
    values: list[Scalar] = Field(default_factory=lambda: list(WRITE_VALUES), min_length=1)
    priority: Priority | None = 8
    datatype: Datatype = "auto"


class ReadPropertyMultipleParams(StrictModel):
    """``read-property-multiple``: one ReadPropertyMultiple per entry of ``requests``, in turn."""

    requests: list[dict[ObjectSelector, list[PropertyName]]] = Field(
        default_factory=lambda: [dict(r) for r in RPM_REQUESTS], min_length=1
    )


class WritePropertyMultipleParams(StrictModel):
    """``write-property-multiple``: one WritePropertyMultiple per entry of ``requests``, in turn."""

    requests: list[dict[ObjectSelector, dict[PropertyName, Scalar]]] = Field(
        default_factory=lambda: [dict(r) for r in WPM_REQUESTS], min_length=1
    )
    priority: Priority | None = None
    datatype: Datatype = "auto"


class ObjectListParams(StrictModel):
    """``object-list``: ReadProperty of the device's object-list."""

    device: Instance | None = None
    """Device instance (default: the target URL's, else the device that answers)."""
    expect_count: int | None = Field(default=None, ge=1, le=4_194_303)


class CovParams(StrictModel):
    """``cov``: SubscribeCOV, count the notifications, renew before the lifetime ends."""

    objects: list[ObjectSelector] = Field(default_factory=lambda: ["analog-input:1"], min_length=1)
    """Session *i* subscribes to the *i*-th object (cycling)."""
    lifetime: Duration = 120.0
    renew: Duration | None = None
    """Resubscribe period (default: half the lifetime)."""
    confirmed: bool = False

    @field_validator("lifetime")
    @classmethod
    def _lifetime_range(cls, value: float) -> float:
        if value < 1:
            raise ValueError("expected a lifetime of at least 1s")
        return value

    @field_validator("renew")
    @classmethod
    def _renew_positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("expected a renew period > 0")
        return value


class WhoIsParams(StrictModel):
    """``who-is``: Who-Is through the BBMD (the client registers as a foreign device)."""

    low: Instance | None = None
    high: Instance | None = None
    """Instance range (default: the target's device, or every device)."""
    device: Instance | None = None
    """A device that must answer (default: the target's device)."""


class TableParams(StrictModel):
    """``read-fdt`` / ``read-bdt``: read the BBMD's foreign-device or broadcast table."""

    min_entries: int = Field(default=0, ge=0, le=65_535)


class RouteCheckParams(StrictModel):
    """``route-check``: Who-Is-Router-To-Network (through the BBMD of the router's port)."""

    network: int | None = Field(default=None, ge=1, le=65534)
    """Network that a router must announce (default: the target URL's ``dnet``)."""


OPERATIONS: dict[str, type[StrictModel]] = {
    "read-property": ReadPropertyParams,
    "write-property": WritePropertyParams,
    "read-property-multiple": ReadPropertyMultipleParams,
    "write-property-multiple": WritePropertyMultipleParams,
    "object-list": ObjectListParams,
    "cov": CovParams,
    "who-is": WhoIsParams,
    "read-fdt": TableParams,
    "read-bdt": TableParams,
    "route-check": RouteCheckParams,
}
