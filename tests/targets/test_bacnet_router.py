"""Devices reached through bac-py's router across transports (bac-py's two mixed scenarios):
a BACnet/IP client, a router, and BACnet/IPv6 devices or BACnet/SC nodes on network 2."""

from __future__ import annotations

import asyncio
import gc

import pytest

from protobench.engine.metrics import OpRecorder
from protobench.protocols.bacnet_ip.address import parse_target
from protobench.protocols.bacnet_ip.discover import discover
from protobench.protocols.bacnet_ip.options import BacnetIpOptions
from protobench.protocols.base import StreamSession
from protobench.targets.bacnet import BacnetIpTarget, instance_vmac
from protobench.targets.bacnet_router import BacnetRouterTarget, sc_vmac
from protobench.targets.base import ServeError
from tests.support.bacnet import exchange, open_op, served
from tests.support.timing import S, eventually

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.usefixtures("forget_learned_instances"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def device_url(url: str, dadr: bytes, instance: int) -> str:
    """The router's URL with another device of network 2."""
    target = parse_target(url)
    return f"bacnet://{target.endpoint}/?dnet=2&dadr={dadr.hex()}&device={instance}&bbmd=1"


async def every_op_through_the_router(url: str) -> None:
    """Reads, writes, RPM, WPM, the object-list, COV and a route check through the router."""
    checks = [
        ("read-property", {"objects": ["analog-output:1"], "expect": 51.0}),
        ("write-property", {"objects": ["analog-value:2"], "values": [68.0]}),
        ("read-property", {"objects": ["analog-value:2"], "expect": 68.0}),
        ("read-property-multiple", {}),
        ("write-property-multiple", {}),
        ("object-list", {"expect_count": 40}),
        ("route-check", {}),
    ]
    for op, params in checks:
        session = await open_op(url, op, params, op_timeout=3.0)
        try:
            error, _ = await exchange(session)
        finally:
            await session.close()
        assert error is None, (url, op, error)
    session = await open_op(url, "cov", {"objects": ["analog-input:2"]}, op_timeout=3.0)
    assert isinstance(session, StreamSession)
    recorder = OpRecorder("cov")
    task = asyncio.create_task(session.run(recorder))
    try:
        await eventually(lambda: recorder.counters["notifications"] >= 3, 20 * S, "notifications")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await session.close()
    assert not recorder.errors


async def test_bacnet_ip_to_router_to_bacnet_ipv6_devices() -> None:
    options = {"to": "ipv6", "devices": 2, "drift": True, "drift_interval": 0.2}
    async with served(BacnetRouterTarget(), **options) as announced:
        target = parse_target(announced.url)
        assert (target.dnet, target.dadr, target.device) == (2, instance_vmac(501), 501)
        assert "BACnet/IPv6" in announced.kind
        second = device_url(announced.url, instance_vmac(502), 502)
        for url in (announced.url, second):
            await every_op_through_the_router(url)
        info = await discover(
            second.split("?")[0] + "?dnet=2&dadr=0001f6", BacnetIpOptions(), 3.0 * S
        )
    assert info.target.device_instance == 502
    assert len(info.object_list) == 40
    assert info.cov_object is not None


async def test_bacnet_ip_to_router_to_bacnet_sc_nodes_over_tls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    options = {"to": "sc", "devices": 2, "drift": True, "drift_interval": 0.2}
    async with served(BacnetRouterTarget(), **options) as announced:
        assert "BACnet/SC via wss://127.0.0.1:" in announced.kind
        target = parse_target(announced.url)
        assert (target.dadr, target.device) == (sc_vmac(1), 501)
        second = device_url(announced.url, sc_vmac(2), 502)
        for url in (announced.url, second):
            await every_op_through_the_router(url)
        # A full collection now rather than whenever the process's allocations call for one
        # (bac-py 1.5.7's router, left alone, starts its SC port twice: the first hub connection,
        # unreferenced, is destroyed by a collection and drops the router's live one with it).
        gc.collect()
        info = await discover(announced.url, BacnetIpOptions(), 3.0 * S)
    assert (info.target.device_instance, info.name) == (501, "protobench-stress-501")
    assert info.answers_who_is
    destroyed = [r.getMessage() for r in caplog.records if "destroyed but it is pending" in r.msg]
    assert not destroyed, destroyed


async def test_the_router_and_the_device_refuse_to_bind_off_loopback_or_the_router_on_ipv6() -> (
    None
):
    router = BacnetRouterTarget()
    with pytest.raises(ServeError, match="announced port is BACnet/IP"):
        await router.serve("::1", 0, router.options(to="ipv6"), lambda _: None)
    device = BacnetIpTarget()
    with pytest.raises(ServeError, match="loopback"):
        await device.serve("192.0.2.1", 0, device.options(), lambda _: None)
