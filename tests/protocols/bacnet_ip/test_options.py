"""Target URLs, object selectors and the op parameter models of the BACnet/IP plugin."""

from __future__ import annotations

import pytest
from bac_py.types.enums import ObjectType
from bac_py.types.primitives import ObjectIdentifier
from pydantic import ValidationError

from protobench.profiles.loader import load
from protobench.protocols.bacnet_ip.address import TargetAddress, parse_target
from protobench.protocols.bacnet_ip.objects import expand_all, parse_selector
from protobench.protocols.bacnet_ip.options import (
    BacnetIpOptions,
    CovParams,
    ReadPropertyMultipleParams,
    ReadPropertyParams,
    WritePropertyParams,
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


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("udp://127.0.0.1:47808", "expected a URL"),
        ("bacnet://example.org/", "IPv4"),
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
    assert BacnetIpOptions().interface == "127.0.0.1"
    assert BacnetIpOptions().broadcast_address == "127.255.255.255"
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
