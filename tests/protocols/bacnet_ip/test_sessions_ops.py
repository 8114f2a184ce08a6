"""Every BACnet/IP operation against the embedded targets, over real UDP on loopback; the
property services and COV on BACnet/IPv6 too (``FAMILIES``: bac-py's B/IPv6 device on ::1)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import psutil
import pytest
from bac_py import BACnetApplication
from bac_py.objects.analog import AnalogInputObject

from protobench.engine.metrics import OpRecorder
from protobench.protocols.bacnet_ip.address import join_endpoint, parse_target
from protobench.protocols.bacnet_ip.inventory import learn_instance
from protobench.protocols.bacnet_ip.options import BacnetIpOptions
from protobench.protocols.bacnet_ip.sessions import LeanSession
from protobench.protocols.base import StreamSession
from protobench.targets.bacnet import (
    BacnetBbmdTarget,
    BacnetIpTarget,
    device_config,
    free_udp_port,
)
from protobench.targets.bacnet_objects import add_stress_objects
from protobench.targets.bacnet_router import BacnetRouterTarget
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.bacnet import (
    ArrayOnlyResponder,
    DropProxy,
    Responder,
    exchange,
    open_op,
    outcome,
    served,
)
from tests.support.timing import S, eventually

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.usefixtures("forget_learned_instances"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


FAMILIES = pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
"""Runs a test against the embedded server on BACnet/IP and on BACnet/IPv6."""


def read_value(session: Any) -> Any:
    assert isinstance(session, LeanSession)
    return session.requests[0].value  # type: ignore[attr-defined]


@FAMILIES
async def test_read_property_returns_the_present_value_of_ai1(ipv6: bool) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6) as announced:
        assert announced.url.endswith("?device=400")
        error, session = await outcome(
            announced.url, "read-property", {"objects": ["analog-input:1"], "expect": 61.5}
        )
        assert error is None
        assert read_value(session) == 61.5
        error, _ = await outcome(
            announced.url, "read-property", {"objects": ["analog-input:1"], "expect": 61.0}
        )
        assert error is not None
        assert error.error_class == ErrorClass.VALIDATION


@FAMILIES
async def test_object_list_has_the_40_objects(ipv6: bool) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6) as announced:
        error, session = await outcome(announced.url, "object-list", {"expect_count": 40})
        assert error is None
        assert isinstance(session, LeanSession)
        objects = session.requests[0].objects  # type: ignore[attr-defined]
        assert len(objects) == 40
        assert {o.object_type.name for o in objects} >= {
            "DEVICE",
            "ANALOG_INPUT",
            "SCHEDULE",
            "NOTIFICATION_CLASS",
        }


@FAMILIES
async def test_write_property_then_read_property_reads_it_back(ipv6: bool) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6) as announced:
        for value in (72.5, 68.0):
            error, _ = await outcome(
                announced.url, "write-property", {"objects": ["analog-value:3"], "values": [value]}
            )
            assert error is None
            error, session = await outcome(
                announced.url, "read-property", {"objects": ["analog-value:3"], "expect": value}
            )
            assert error is None
            assert read_value(session) == value


@FAMILIES
async def test_multiple_reads_and_writes_of_the_seed_mix_succeed(ipv6: bool) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6) as announced:
        for op, count in (("read-property-multiple", 5), ("write-property-multiple", 3)):
            session = await open_op(announced.url, op)
            try:
                results = [await exchange(session) for _ in range(count)]
            finally:
                await session.close()
            assert [error for error, _ in results] == [None] * count
        error, _ = await outcome(
            announced.url, "read-property", {"objects": ["analog-value:4"], "expect": 74.0}
        )
        assert error is None


@pytest.mark.parametrize(
    ("params", "code"),
    [
        (
            {"objects": ["analog-input:1"], "property": "elevator-group"},
            "property:unknown-property",
        ),
        ({"objects": ["analog-input:99"]}, "object:unknown-object"),
    ],
)
@FAMILIES
async def test_failures_are_protocol_errors_with_class_and_code(
    params: dict[str, Any], code: str, ipv6: bool
) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6) as announced:
        error, _ = await outcome(announced.url, "read-property", params)
    assert error is not None
    assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, code)


@FAMILIES
async def test_writing_a_read_only_value_is_refused(ipv6: bool) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6) as announced:
        error, _ = await outcome(
            announced.url, "write-property", {"objects": ["analog-input:1"], "values": [1.0]}
        )
    assert error is not None
    assert error.code == "property:write-access-denied"


async def test_a_device_that_stops_answering_gives_timeouts() -> None:
    async with served(BacnetIpTarget()) as announced:
        target = parse_target(announced.url)
        proxy = await DropProxy.start((target.host, target.port))
        try:
            session = await open_op(
                f"bacnet://{proxy.address}/?device=400", "read-property", op_timeout=0.5
            )
            try:
                assert (await exchange(session))[0] is None
                proxy.drop = True
                error, _ = await exchange(session)
            finally:
                await session.close()
        finally:
            proxy.close()
    assert error is not None
    assert error.error_class == ErrorClass.TIMEOUT


@FAMILIES
async def test_cov_counts_notifications_of_drifting_values(ipv6: bool) -> None:
    async with served(BacnetIpTarget(), ipv6=ipv6, drift=True, drift_interval=0.1) as announced:
        session = await open_op(
            announced.url, "cov", {"objects": ["analog-input:2"], "lifetime": "60s"}
        )
        assert isinstance(session, StreamSession)
        recorder = OpRecorder("cov")
        task = asyncio.create_task(session.run(recorder))
        await eventually(lambda: recorder.counters["notifications"] >= 5, 15 * S, "notifications")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await session.close()
    assert len(recorder.latencies) == 1
    assert recorder.counters["notifications"] >= 5
    assert not recorder.errors


async def test_bbmd_who_is_and_tables_with_foreign_devices() -> None:
    async with served(BacnetBbmdTarget()) as announced:
        assert announced.url.endswith("?device=551&bbmd=1")
        fd = {"foreign_device": True}
        reader = await open_op(
            announced.url, "read-property", {"objects": ["analog-input:1"], "expect": 61.5}, fd
        )
        try:
            assert (await exchange(reader))[0] is None
            for op, params in (("who-is", {}), ("read-fdt", {"min_entries": 1}), ("read-bdt", {})):
                error, _ = await outcome(announced.url, op, params)
                assert error is None, (op, error)
            # The Who-Is and the device's broadcast I-Am reach the foreign device too.
            assert isinstance(reader, LeanSession)
            await eventually(lambda: reader.client.forwarded >= 2, 10 * S, "forwarded broadcasts")
            assert (await exchange(reader))[0] is None
            assert reader.client.stray == 0
        finally:
            await reader.close()
        error, _ = await outcome(announced.url, "read-fdt", {"min_entries": 5})
        assert error is not None
        assert error.error_class == ErrorClass.VALIDATION


async def test_router_reaches_the_remote_device_and_answers_route_checks() -> None:
    async with served(BacnetRouterTarget()) as announced:
        target = parse_target(announced.url)
        assert (target.dnet, target.device, target.bbmd) == (2, 501, target.endpoint)
        error, session = await outcome(
            announced.url, "read-property", {"objects": ["analog-input:1"], "expect": 61.5}
        )
        assert error is None
        assert read_value(session) == 61.5
        error, _ = await outcome(announced.url, "object-list", {"expect_count": 40})
        assert error is None
        error, _ = await outcome(announced.url, "route-check")
        assert error is None
        error, _ = await outcome(announced.url, "route-check", {"network": 7}, op_timeout=0.5)
        assert error is not None
        assert error.error_class == ErrorClass.TIMEOUT


def loopback_only(process: psutil.Process) -> list[str]:
    """The local addresses of the process's inet sockets that are not 127.0.0.1."""
    return [
        f"{c.laddr.ip}:{c.laddr.port}"
        for c in process.net_connections(kind="inet")
        if c.laddr.ip != "127.0.0.1"
    ]


async def test_clients_and_targets_bind_only_127_0_0_1() -> None:
    me = psutil.Process()
    async with (
        served(BacnetIpTarget(), drift=True) as plain,
        served(BacnetBbmdTarget()) as bbmd,
        served(BacnetRouterTarget()) as router,
    ):
        sessions = [
            await open_op(plain.url, "read-property"),
            await open_op(plain.url, "cov"),
            await open_op(bbmd.url, "read-property", options={"foreign_device": True}),
            await open_op(bbmd.url, "who-is"),
            await open_op(bbmd.url, "read-bdt"),
            await open_op(router.url, "write-property"),
            await open_op(router.url, "route-check"),
        ]
        try:
            for session in sessions:
                if not isinstance(session, StreamSession):
                    assert (await exchange(session))[0] is None
            sockets = me.net_connections(kind="inet")
            assert len(sockets) >= 10
            assert loopback_only(me) == []
        finally:
            for session in sessions:
                await session.close()


@pytest.mark.parametrize("name", ["bacnet-ip", "bacnet-router", "bacnet-bbmd"])
def test_served_targets_bind_only_127_0_0_1(name: str) -> None:
    command = [sys.executable, "-m", "protobench", "serve", name, "--port", "0", "--announce"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as child:
        try:
            assert child.stdout is not None
            announced = json.loads(child.stdout.readline())
            process = psutil.Process(announced["pid"])
            assert len(process.net_connections(kind="inet")) >= (
                3 if name == "bacnet-router" else 1
            )
            assert loopback_only(process) == []
        finally:
            child.terminate()
            child.wait(timeout=10)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_big_bac_py_device_object_list_arrives_in_segments(host: str) -> None:
    """bac-py's own server with 400 more analog inputs (a 440-object list, about 2.2 KB), on
    BACnet/IP and BACnet/IPv6."""
    port = free_udp_port(host)
    app = BACnetApplication(device_config(4321, host, port))
    await app.start()
    try:
        add_stress_objects(app, 4321, drift=False)
        for i in range(11, 411):
            app.object_db.add(AnalogInputObject(i, object_name=f"AI-{i}", present_value=1.0 * i))
        url = f"bacnet://{join_endpoint(host, port)}/"
        error, _ = await outcome(url, "object-list", {"expect_count": 440})
        assert error is None
        reader = await open_op(url, "read-property", {"objects": ["analog-input:*"]})
        try:
            assert isinstance(reader, LeanSession)
            assert len(reader.requests) == 410
            assert (await exchange(reader))[0] is None
        finally:
            await reader.close()
    finally:
        await app.stop()


async def test_rpm_all_required_optional_and_empty_lists_of_our_target() -> None:
    async with served(BacnetIpTarget()) as announced:
        for special in ("all", "required", "optional"):
            error, _ = await outcome(
                announced.url,
                "read-property-multiple",
                {"requests": [{"analog-input:1": [special], "analog-value:1": ["present-value"]}]},
            )
            assert error is None, (special, error)
        for selector, prop in (
            ("notification-class:1", "recipient-list"),
            ("device:400", "active-cov-subscriptions"),
        ):
            error, _ = await outcome(
                announced.url, "read-property", {"objects": [selector], "property": prop}
            )
            assert error is None, (prop, error)


async def test_refused_wildcard_without_an_i_am_says_to_add_the_device() -> None:
    responder = await Responder.start()
    responder.refuse_wildcard = True
    url = responder.url.split("?")[0]
    try:
        with pytest.raises(OpError) as caught:
            await open_op(url, "read-property", {"objects": ["analog-input:*"]}, op_timeout=0.5)
    finally:
        responder.close()
    error = caught.value
    assert (error.error_class, error.code) == (ErrorClass.PROTOCOL, "object:unknown-object")
    assert error.detail.startswith("object-list probe of device:4194303")
    assert "add ?device=N to the target URL" in error.detail


async def test_who_is_learns_the_instance_through_the_targets_bbmd() -> None:
    # bac-py answers Who-Is with a broadcast I-Am, which reaches a foreign device of its BBMD.
    async with served(BacnetIpTarget(), bbmd=True) as announced:
        target = parse_target(announced.url.replace("device=400&", ""))
        assert target.device is None
        assert await learn_instance(target, BacnetIpOptions(), 1.0 * S) == 400


async def test_object_list_of_a_device_without_segmentation_or_rpm_is_read_element_by_element() -> (
    None
):
    responder = await ArrayOnlyResponder.start(objects=40)
    try:
        session = await open_op(responder.url, "read-property", {"objects": ["analog-input:*"]})
        try:
            assert isinstance(session, LeanSession)
            assert len(session.requests) == 40
            assert (await exchange(session))[0] is None
        finally:
            await session.close()
    finally:
        responder.close()
    read_property, rpm = 12, 14
    # The whole list (aborted), its length, one RPM batch (rejected), 41 elements, 1 read.
    assert responder.services == {read_property: 1 + 1 + 41 + 1, rpm: 1}
