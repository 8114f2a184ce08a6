"""Building a hot-path session's requests: values per object, when the object-list is read."""

from __future__ import annotations

from bac_py.encoding.primitives import decode_all_application_values
from bac_py.services.write_property import WritePropertyRequest
from bac_py.types.enums import ObjectType
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.codec import WriteRequest
from protobench.protocols.bacnet_ip.inventory import Inventory, needs_probe
from protobench.protocols.bacnet_ip.options import (
    ReadPropertyMultipleParams,
    WritePropertyParams,
)
from protobench.protocols.bacnet_ip.sessions import selectors_of, write_property
from tests.protocols.bacnet_ip.test_codec import decoded_request

DEVICE = ObjectIdentifier(ObjectType.DEVICE, 1)


def writes(objects: list[str], values: list[float]) -> list[tuple[int, float]]:
    params = WritePropertyParams(objects=objects, values=values)
    result = []
    for request in write_property(params, Inventory(DEVICE, []), None):
        assert isinstance(request, WriteRequest)
        body = WritePropertyRequest.decode(decoded_request(request, 0).service_request)
        value = decode_all_application_values(body.property_value)[0]
        result.append((body.object_identifier.instance_number, value))
    return result


def test_each_object_takes_every_value_in_turn() -> None:
    sent = writes(["analog-value:1-2"], [72.5, 68.0])
    assert sent == [(1, 72.5), (2, 68.0), (1, 68.0), (2, 72.5)]
    for instance in (1, 2):
        mine = [value for obj, value in sent if obj == instance]
        assert mine[0] != mine[1]
    assert writes(["analog-value:1-3"], [1.0, 2.0]) == [
        (1, 1.0),
        (2, 2.0),
        (3, 1.0),
        (1, 2.0),
        (2, 1.0),
        (3, 2.0),
    ]


def test_probe_only_when_a_selector_is_a_wildcard() -> None:
    fixed = WritePropertyParams(objects=["analog-value:1-5"])
    assert not needs_probe(selectors_of(fixed))
    wild = ReadPropertyMultipleParams(
        requests=[{"analog-input:1": ["present-value"]}, {"binary-input:*": ["present-value"]}]
    )
    assert needs_probe(selectors_of(wild))
