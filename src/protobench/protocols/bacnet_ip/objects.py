"""Object selectors of BACnet profiles: ``analog-input:1``, ``ai:3-5``, ``analog-input:*``.

A selector names an object type (any name bac-py accepts: ``analog-input``,
``ai``, ``ANALOG_INPUT``, or its number: ``0``, ``63``) and an instance, an
inclusive range ``first-last``, or ``*`` for every object of that type in the
device. ``,`` may replace ``:``. Selectors are parsed when a profile is
validated; wildcards are expanded against the device's object-list when a
session opens.

Objects and properties are written back (in messages, summaries and fitted
profiles) by their names where bac-py names them and by their numbers where it
does not: a Color object (type 63, addendum 135-2020ca) is ``63:1``, a
proprietary property ``5000``. Both forms read back as the same selector.
"""

from __future__ import annotations

from dataclasses import dataclass

from bac_py.types.enums import ObjectType, PropertyIdentifier
from bac_py.types.parsing import parse_object_identifier
from bac_py.types.primitives import ObjectIdentifier

MAX_INSTANCE = 4_194_303
"""The largest instance number; on a Device object it means "the device that receives"."""


@dataclass(frozen=True)
class Selector:
    """An object type and the instances chosen: a range, or every one (``None``)."""

    object_type: ObjectType
    first: int | None
    last: int | None

    @property
    def wildcard(self) -> bool:
        return self.first is None

    def expand(self, inventory: list[ObjectIdentifier]) -> list[ObjectIdentifier]:
        """The objects chosen, in instance order; wildcards take theirs from ``inventory``."""
        if self.first is None or self.last is None:
            found = [oid for oid in inventory if oid.object_type == self.object_type]
            return sorted(found, key=lambda oid: oid.instance_number)
        return [ObjectIdentifier(self.object_type, i) for i in range(self.first, self.last + 1)]


def parse_selector(text: str) -> Selector:
    """Parse one selector; ``ValueError`` says what is wrong."""
    sep = ":" if ":" in text else ","
    type_part, found, instance_part = text.partition(sep)
    instance_part = instance_part.strip()
    if not found or not instance_part:
        raise ValueError(f"expected an object such as 'analog-input:1' or 'ai:*', got {text!r}")
    object_type = parse_object_identifier(f"{type_part.strip()}:0").object_type
    if instance_part == "*":
        return Selector(object_type, None, None)
    first_text, dash, last_text = instance_part.partition("-")
    try:
        first = int(first_text)
        last = int(last_text) if dash else first
    except ValueError:
        raise ValueError(f"expected an instance, a range 'a-b' or '*' in {text!r}") from None
    if not 0 <= first <= last <= MAX_INSTANCE:
        raise ValueError(f"instances must satisfy 0 <= first <= last <= {MAX_INSTANCE} in {text!r}")
    return Selector(object_type, first, last)


def expand_all(
    selectors: list[Selector], inventory: list[ObjectIdentifier]
) -> list[ObjectIdentifier]:
    """Every object chosen by ``selectors``, in order, without duplicates."""
    seen: dict[ObjectIdentifier, None] = {}
    for selector in selectors:
        for oid in selector.expand(inventory):
            seen.setdefault(oid, None)
    return list(seen)


def device_in(
    answered: ObjectIdentifier, objects: list[ObjectIdentifier]
) -> ObjectIdentifier | None:
    """The device whose object-list ``objects`` is, ``None`` if it is not listed.

    ``answered`` is the device the reply names; a device that echoes the
    wildcard instance is the one device object of its list.
    """
    if answered.instance_number == MAX_INSTANCE:
        devices = [oid for oid in objects if oid.object_type == ObjectType.DEVICE]
        return devices[0] if len(devices) == 1 else None
    return answered if answered in objects else None


_NAMED_TYPES = frozenset(ObjectType)
_NAMED_PROPERTIES = frozenset(PropertyIdentifier)
"""The members bac-py names (a number it does not name is a pseudo-member ``VENDOR_63``)."""


def type_name(object_type: ObjectType) -> str:
    """``analog-input``, or the number of a type bac-py does not name (``63``)."""
    if object_type in _NAMED_TYPES:
        return object_type.name.lower().replace("_", "-")
    return str(int(object_type))


def object_name(oid: ObjectIdentifier) -> str:
    """``analog-input:1`` (``63:1``) - the selector form of one object."""
    return f"{type_name(oid.object_type)}:{oid.instance_number}"


def property_name(prop: PropertyIdentifier) -> str:
    """``present-value`` (``5000``) - the profile form of one property."""
    if prop in _NAMED_PROPERTIES:
        return prop.name.lower().replace("_", "-")
    return str(int(prop))
