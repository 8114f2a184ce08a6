"""Profiles fitted to a discovered device: only what it has, values of their datatypes."""

from __future__ import annotations

import tomllib

from bac_py.types.enums import ObjectType
from bac_py.types.primitives import ObjectIdentifier

from protobench.profiles import loader
from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.bacnet_ip.discover import DeviceInfo, ObjectInfo
from protobench.protocols.bacnet_ip.fit import fitted_profile, ranges, summary

AI, AV, MSV, BI = (
    ObjectType.ANALOG_INPUT,
    ObjectType.ANALOG_VALUE,
    ObjectType.MULTI_STATE_VALUE,
    ObjectType.BINARY_INPUT,
)
PROPS = ["object-name", "present-value"]


def oid(kind: ObjectType, instance: int) -> ObjectIdentifier:
    return ObjectIdentifier(kind, instance)


def device(
    segmentation: str,
    cov: bool,
    inputs: int = 3,
    accepted: ObjectIdentifier | None = None,
    refused: list[tuple[ObjectIdentifier, str]] | None = None,
) -> DeviceInfo:
    objects = [
        ObjectInfo(oid(AI, i), f"AI-{i}", "real", 60.0, False, None, PROPS)
        for i in range(1, inputs + 1)
    ]
    objects += [
        ObjectInfo(oid(AV, 1), "AV-1", "real", 70.25, True, None, PROPS),
        ObjectInfo(oid(AV, 2), "AV-2", "real", 71.0, True, None, PROPS),
        ObjectInfo(oid(MSV, 1), "MSV-1", "unsigned", 1, True, 3, PROPS),
        ObjectInfo(oid(BI, 7), "BI-7", "enumerated", 0, False, None, PROPS),
        ObjectInfo(
            oid(ObjectType.NOTIFICATION_CLASS, 1), "NC-1", None, None, False, None, ["object-name"]
        ),
    ]
    listed = [oid(ObjectType.DEVICE, 9), *(o.oid for o in objects)]
    return DeviceInfo(
        TargetAddress("127.0.0.1", 47808, device=9),
        True,
        "dev",
        "vendor",
        "model",
        480,
        segmentation,
        cov,
        objects,
        listed,
        accepted,
        refused or [],
    )


def test_ranges_join_consecutive_instances_per_type() -> None:
    oids = [oid(AI, 3), oid(AI, 1), oid(AI, 2), oid(AI, 7), oid(AV, 1)]
    assert ranges(oids) == ["analog-input:1-3", "analog-input:7", "analog-value:1"]


def test_fitted_profile_loads_and_asks_only_for_what_the_device_has() -> None:
    text = fitted_profile(device("both", cov=True, accepted=oid(AV, 2)), "mine")
    loader.parse(text, "mine.toml")
    profile = tomllib.loads(text)
    assert profile["target"] == "bacnet://127.0.0.1:47808/?device=9"
    groups = {g.get("name", g["op"]): g for g in profile["group"]}
    assert groups["read-property"]["objects"] == [
        "analog-input:1-3",
        "analog-value:1-2",
        "multi-state-value:1",
        "binary-input:7",
    ]
    assert groups["write-analog-value"]["values"] == [70.25, 71.25]
    assert groups["write-analog-value"]["datatype"] == "real"
    assert groups["write-analog-value"]["priority"] == 16
    assert groups["write-multi-state-value"]["values"] == [1, 2]
    assert groups["write-multi-state-value"]["datatype"] == "unsigned"
    assert not any(
        "analog-input" in g["objects"][0] for g in profile["group"] if g["op"] == "write-property"
    )
    first_rpm = groups["read-property-multiple"]["requests"][0]
    assert list(first_rpm) == ["analog-input:1", "analog-value:1"]
    assert groups["object-list"]["expect_count"] == 9
    assert groups["cov"]["objects"] == ["analog-value:2"]


def test_cov_goes_where_a_subscription_was_accepted_or_the_profile_says_why_not() -> None:
    refused = [(oid(ObjectType.TIMER, 1), "services:cov-subscription-failed")]
    text = fitted_profile(device("both", cov=True, refused=refused), "mine")
    loader.parse(text, "mine.toml")
    assert "cov" not in {g["op"] for g in tomllib.loads(text)["group"]}
    assert (
        "# No COV subscription: every object tried refused SubscribeCOV: "
        "timer:1 (services:cov-subscription-failed)." in text
    )
    assert "COV no: every object tried refused SubscribeCOV" in summary(
        device("both", cov=True, refused=refused)
    )
    quiet = fitted_profile(device("both", cov=False), "quiet")
    assert "# No COV subscription: the device does not list SubscribeCOV" in quiet


def test_object_types_bac_py_does_not_name_are_written_by_number() -> None:
    color, temperature = ObjectType(63), ObjectType(64)
    info = device("both", cov=True, accepted=oid(temperature, 1))
    info.objects += [
        ObjectInfo(oid(color, 1), "Color-1", "real", 0.3, False, None, PROPS),
        ObjectInfo(oid(temperature, 1), "CT-1", "unsigned", 2700, True, None, PROPS),
    ]
    info.object_list += [oid(color, 1), oid(temperature, 1)]
    text = fitted_profile(info, "colors")
    loader.parse(text, "colors.toml")
    groups = {g.get("name", g["op"]): g for g in tomllib.loads(text)["group"]}
    assert "63:1" in groups["read-property"]["objects"]
    assert groups["write-64"]["objects"] == ["64:1"]
    assert groups["cov"]["objects"] == ["64:1"]
    assert "vendor" not in text.lower()
    assert "63                             1  real" in summary(info)


def test_a_big_unsegmented_device_gets_no_object_list_group() -> None:
    text = fitted_profile(device("none", cov=False, inputs=200), "big")
    loader.parse(text, "big.toml")
    ops = {g["op"] for g in tomllib.loads(text)["group"]}
    assert "object-list" not in ops


def test_summary_names_types_datatypes_and_commandable_objects() -> None:
    text = summary(device("both", cov=True))
    assert "analog-input                   3  real" in text
    assert "commandable: analog-value:1-2, multi-state-value:1" in text
