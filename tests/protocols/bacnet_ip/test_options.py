"""Target URLs, object selectors and the op parameter models of the BACnet/IP plugin."""

from __future__ import annotations

import pytest
from bac_py.types.enums import ObjectType, PropertyIdentifier
from bac_py.types.primitives import ObjectIdentifier
from pydantic import ValidationError

from protobench.profiles.loader import load
from protobench.protocols.bacnet_ip.address import TargetAddress, parse_target
from protobench.protocols.bacnet_ip.objects import (
    expand_all,
    object_name,
    parse_selector,
    property_name,
)
from protobench.protocols.bacnet_ip.options import (
    BacnetIpOptions,
    CovParams,
    ReadPropertyMultipleParams,
    ReadPropertyParams,
    WritePropertyParams,
    local_address,
)


def test_plain_url() -> None:
    target = parse_target("bacnet://127.0.0.1:47809/?device=400")
    assert target == TargetAddress("127.0.0.1", 47809, device=400)
    assert (target.device_address, target.device_instance, target.routed) == (
        "127.0.0.1:47809",
        400,
        False,
    )


def test_defaults_port_and_wildcard_device() -> None:
    target = parse_target("bacnet://localhost")
    assert (target.host, target.port, target.device_instance) == ("127.0.0.1", 47808, 4_194_303)


def test_routed_url_with_bbmd_round_trips() -> None:
    url = "bacnet://127.0.0.1:40000/?dnet=2&dadr=7f000001bac1&device=501&bbmd=1"
    target = parse_target(url)
    assert (target.dnet, target.dadr, target.bbmd) == (
        2,
        bytes.fromhex("7f000001bac1"),
        "127.0.0.1:40000",
    )
    assert target.device_address == "2:7f000001bac1"
    assert parse_target(target.url()) == target
    assert parse_target("bacnet://127.0.0.1/?bbmd=127.0.0.1:47809").bbmd == "127.0.0.1:47809"


def test_ipv6_urls_name_the_host_in_brackets_and_round_trip() -> None:
    target = parse_target("bacnet://[::1]:47809/?device=400&bbmd=1")
    assert (target.host, target.port, target.ipv6) == ("::1", 47809, True)
    assert (target.endpoint, target.bbmd) == ("[::1]:47809", "[::1]:47809")
    assert target.url() == "bacnet://[::1]:47809/?device=400&bbmd=1"
    assert parse_target(target.url()) == target
    routed = parse_target("bacnet://127.0.0.1:40000/?dnet=2&dadr=0001f5&device=501")
    assert (routed.ipv6, routed.device_address) == (False, "2:0001f5")
    assert parse_target("bacnet://[0:0:0:0:0:0:0:1]/").host == "::1"
    assert BacnetIpOptions(bbmd="[::1]:47809").bbmd == "[::1]:47809"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("udp://127.0.0.1:47808", "expected a URL"),
        ("bacnet://example.org/", "IPv4 address or an IPv6 address in brackets"),
        ("bacnet://::1:47808/", "bad port|IPv6"),
        ("bacnet://127.0.0.1/?dnet=2", "both dnet and dadr"),
        ("bacnet://127.0.0.1/?device=x", "integer"),
        ("bacnet://127.0.0.1/?device=4194304", "between"),
        ("bacnet://127.0.0.1/?colour=red", "unknown URL parameter"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_target(url)


def test_selectors_expand_against_the_inventory() -> None:
    ai = [ObjectIdentifier(ObjectType.ANALOG_INPUT, i) for i in (3, 1, 2)]
    bi = ObjectIdentifier(ObjectType.BINARY_INPUT, 1)
    inventory = [ObjectIdentifier(ObjectType.DEVICE, 400), *ai, bi]
    chosen = expand_all(
        [parse_selector("analog-input:*"), parse_selector("bi,1"), parse_selector("ai:1")],
        inventory,
    )
    assert [o.instance_number for o in chosen] == [1, 2, 3, 1]
    assert chosen[-1] == bi
    assert [o.instance_number for o in parse_selector("av:2-4").expand([])] == [2, 3, 4]
    assert parse_selector("ai:*").wildcard


def test_types_bac_py_does_not_name_are_selected_by_number_and_named_back_so() -> None:
    color = parse_selector("63:1")
    assert int(color.object_type) == 63
    [oid] = color.expand([])
    assert object_name(oid) == "63:1"
    assert parse_selector(object_name(oid)) == color
    assert object_name(ObjectIdentifier(ObjectType.ANALOG_INPUT, 2)) == "analog-input:2"
    assert parse_selector("0:2") == parse_selector("analog-input:2")
    assert property_name(PropertyIdentifier(5000)) == "5000"
    assert property_name(PropertyIdentifier.PRESENT_VALUE) == "present-value"
    assert ReadPropertyParams(objects=["63:*", "64:1-2"]).objects == ["63:*", "64:1-2"]


@pytest.mark.parametrize("text", ["analog-input", "analog-inptu:1", "ai:x", "ai:5-2", "ai:"])
def test_bad_selectors_are_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - bac-py and we word these differently
        parse_selector(text)


def test_params_defaults_reproduce_the_seed_workload() -> None:
    assert ReadPropertyParams().objects == [
        "analog-input:*",
        "binary-input:*",
        "multi-state-input:*",
    ]
    write = WritePropertyParams()
    assert (write.values, write.priority) == ([72.5, 68.0], 8)
    assert len(ReadPropertyMultipleParams().requests) == 5
    assert CovParams().lifetime == 120.0
    assert local_address(BacnetIpOptions(), ipv6=False) == "127.0.0.1"
    assert local_address(BacnetIpOptions(), ipv6=True) == "::1"
    assert local_address(BacnetIpOptions(interface="127.0.0.2"), ipv6=False) == "127.0.0.2"
    assert BacnetIpOptions().broadcast_address == "127.255.255.255"
    assert BacnetIpOptions().multicast_address == "ff01::bac0"
    assert BacnetIpOptions(bbmd="localhost:47809").bbmd == "127.0.0.1:47809"
    assert BacnetIpOptions(reuse_after="6s").reuse_after == 6.0


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (ReadPropertyParams, {"objects": ["analog-inptu:*"]}),
        (ReadPropertyParams, {"property": "present-valeu"}),
        (ReadPropertyParams, {"objects": []}),
        (WritePropertyParams, {"priority": 17}),
        (ReadPropertyMultipleParams, {"requests": [{"ai:1": ["no-such-property"]}]}),
        (CovParams, {"lifetime": "soon"}),
        (ReadPropertyParams, {"colour": "red"}),
        (BacnetIpOptions, {"bbmd": "bbmd.example:47808"}),
        (BacnetIpOptions, {"bbmd": "::1:47808"}),
        (BacnetIpOptions, {"reuse_after": "-1s"}),
    ],
)
def test_bad_params_are_refused(model: type, data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(data)


@pytest.mark.parametrize("name", ["bacnet-ip", "bacnet-router", "bacnet-bbmd"])
def test_builtin_profiles_validate(name: str) -> None:
    profile = load(name).profile
    ops = {group.op for group in profile.group}
    assert {
        "read-property",
        "write-property",
        "read-property-multiple",
        "write-property-multiple",
    } <= ops
    assert "object-list" in ops
