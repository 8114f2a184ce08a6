"""A discovered BACnet/IP device as text: a summary, and a profile fitted to it (no I/O).

:func:`fitted_profile` writes a ``bacnet-ip`` profile that only asks for what
the device has (:class:`~.discover.DeviceInfo`):

* ``read-property`` of the present-value of every object that has one;
* ``write-property`` per commandable object type, with two values of the
  present-value's datatype (the current value and a nearby one, or both
  states), at priority 16, the lowest: a real device keeps its own commands;
* ``read-property-multiple`` of up to five pairs of objects, each with the
  properties that answered during discovery;
* ``object-list`` every 10 s (when the list fits one reply or the device
  segments), with the count found;
* ``cov`` on the object that accepted a subscription during discovery; when
  none did (or the device does not serve SubscribeCOV), no ``cov`` group, and
  a comment in the profile says why.

Objects of types bac-py does not name are written by number (``63:1``).

The target is the URL with the device instance, so no wildcard probe is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.discover import DeviceInfo, ObjectInfo
from protobench.protocols.bacnet_ip.objects import object_name

RPM_REQUESTS = 5
WRITE_PRIORITY = 16
OBJECT_ID_BYTES = 5
"""Encoded size of one object identifier in an object-list."""
ACK_OVERHEAD = 20
WRITABLE = frozenset({"real", "double", "enumerated", "unsigned", "signed", "boolean"})


def ranges(oids: Iterable[ObjectIdentifier]) -> list[str]:
    """Selectors of these objects, consecutive instances of a type as one range."""
    by_type: dict[str, list[int]] = {}
    for oid in oids:
        kind = object_name(oid).rsplit(":", 1)[0]
        by_type.setdefault(kind, []).append(oid.instance_number)
    selectors = []
    for kind, instances in by_type.items():
        instances.sort()
        start = prev = instances[0]
        for instance in [*instances[1:], None]:
            if instance is not None and instance == prev + 1:
                prev = instance
                continue
            selectors.append(f"{kind}:{start}" if start == prev else f"{kind}:{start}-{prev}")
            if instance is not None:
                start = prev = instance
    return selectors


def summary(info: DeviceInfo) -> str:
    """What the device has, for a terminal."""
    who = "answers Who-Is" if info.answers_who_is else "sent no I-Am to a unicast Who-Is"
    lines = [
        f"device {info.target.device_instance} {json.dumps(info.name or '?')} at "
        f"{info.target.url()} ({who})",
        f"vendor {info.vendor or '?'}, model {info.model or '?'}, max APDU "
        f"{info.max_apdu or '?'}, segmentation {info.segmentation or '?'}, "
        f"COV {_cov_summary(info)}",
        f"{len(info.object_list)} objects in the object-list",
        f"  {'type':26} {'count':>5}  {'present-value':14} commandable",
    ]
    by_type: dict[str, list[ObjectInfo]] = {}
    for obj in info.objects:
        by_type.setdefault(obj.selector.rsplit(":", 1)[0], []).append(obj)
    for kind, objects in by_type.items():
        datatypes = sorted({o.datatype for o in objects if o.datatype}) or ["-"]
        commandable = sum(o.commandable for o in objects)
        lines.append(f"  {kind:26} {len(objects):>5}  {','.join(datatypes):14} {commandable}")
    commanded = ranges(o.oid for o in info.objects if o.commandable)
    lines.append(f"commandable: {', '.join(commanded) if commanded else 'none'}")
    return "\n".join(lines)


def _cov_summary(info: DeviceInfo) -> str:
    if info.cov_object is None:
        return f"no: {info.cov_note}" if info.cov else "no"
    refused = "".join(f"; {object_name(oid)} refused it: {code}" for oid, code in info.cov_refusals)
    return f"yes (a subscription to {object_name(info.cov_object)} was accepted{refused})"


def _toml(value: object) -> str:
    """A TOML value: strings, numbers, booleans and lists of them (JSON's forms are TOML's)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value)


def _write_values(obj: ObjectInfo) -> list[object] | None:
    """Two distinct values of the object's datatype, near its present value."""
    value = obj.value
    if obj.datatype in ("real", "double"):
        base = float(value) if isinstance(value, int | float) else 0.0
        return [round(base, 2), round(base + 1.0, 2)]
    if obj.datatype == "enumerated":
        return [0, 1]
    if obj.datatype == "unsigned" and obj.states is not None:
        return [1, 2] if obj.states >= 2 else None
    if obj.datatype == "unsigned":
        base = int(value) if isinstance(value, int) else 0
        return [base, base + 1]
    if obj.datatype == "signed":
        base = int(value) if isinstance(value, int) else 0
        return [base, base + 1]
    if obj.datatype == "boolean":
        return [False, True]
    return None


def _spread(objects: list[ObjectInfo]) -> list[ObjectInfo]:
    """The objects in turns over their types (first of each type, then second...)."""
    by_type: dict[int, list[ObjectInfo]] = {}
    for obj in objects:
        by_type.setdefault(int(obj.oid.object_type), []).append(obj)
    turns = max((len(group) for group in by_type.values()), default=0)
    return [group[k] for k in range(turns) for group in by_type.values() if k < len(group)]


def _group(lines: list[str], comment: str, **fields: object) -> None:
    lines += ["", f"# {comment}", "[[group]]"]
    lines += [f"{key} = {_toml(value)}" for key, value in fields.items()]


def fitted_profile(info: DeviceInfo, name: str) -> str:
    """A profile (TOML text) that reads and writes only what the device has."""
    device = info.target.device_instance
    readable = [o for o in info.objects if o.datatype is not None]
    lines = [
        f"# Fitted by `protobench discover` to device {device} at {info.target.url()}:",
        f"# {len(info.object_list)} objects, {len(readable)} with a present-value.",
        f"name = {_toml(name)}",
        'protocol = "bacnet-ip"',
        f"description = {_toml(f'Reads and writes of what device {device} has')}",
        f"target = {_toml(info.target.url())}",
        'warmup = "2s"',
        'duration = "10s"',
    ]
    if readable:
        _group(
            lines,
            "The present value of every object that has one.",
            op="read-property",
            count=2,
            objects=ranges(o.oid for o in readable),
            property="present-value",
        )
    commandable: dict[str, list[ObjectInfo]] = {}
    for obj in readable:
        if obj.commandable and obj.datatype in WRITABLE:
            key = f"{obj.selector.rsplit(':', 1)[0]} {obj.datatype}"
            commandable.setdefault(key, []).append(obj)
    for key, objects in commandable.items():
        values = _write_values(objects[0])
        if values is None:
            continue
        _group(
            lines,
            f"Commandable {key} objects, at priority {WRITE_PRIORITY} (the lowest).",
            name=f"write-{key.split()[0]}",
            op="write-property",
            count=1,
            objects=ranges(o.oid for o in objects),
            property="present-value",
            values=values,
            datatype=objects[0].datatype,
            priority=WRITE_PRIORITY,
        )
    with_properties = _spread([o for o in readable if o.properties])
    if with_properties:
        lines += ["", "# Properties that answered during discovery.", "[[group]]"]
        lines += ['op = "read-property-multiple"', "count = 1", "requests = ["]
        for k in range(min(RPM_REQUESTS, (len(with_properties) + 1) // 2)):
            pair = with_properties[2 * k : 2 * k + 2]
            spec = ", ".join(f"{_toml(o.selector)} = {_toml(o.properties)}" for o in pair)
            lines.append(f"  {{ {spec} }},")
        lines.append("]")
    fits = len(info.object_list) * OBJECT_ID_BYTES + ACK_OVERHEAD <= (info.max_apdu or 480)
    if info.object_list and (info.segments or fits):
        _group(
            lines,
            "The whole object-list, every 10 s.",
            op="object-list",
            count=1,
            every="10s",
            expect_count=len(info.object_list),
        )
    if info.cov_object is not None:
        _group(
            lines,
            "One COV subscription (the device accepted it during discovery), renewed every minute.",
            op="cov",
            count=1,
            objects=[object_name(info.cov_object)],
            lifetime="120s",
            renew="60s",
        )
    else:
        lines += ["", f"# No COV subscription: {info.cov_note}."]
    return "\n".join(lines) + "\n"
