"""What is particular to BACnet/IPv6 (Annex U) against bac-py's B/IPv6 device on ::1: a VMAC
per socket, a BBMD with foreign devices (and the broadcasts it forwards), refusals, and
nothing leaving loopback. The property services, segmentation and COV run on both families
in ``test_sessions_ops.py``.

bac-py is the independent implementation here: its B/IPv6 transport answers
the Virtual-Address-Resolution, keeps each client VMAC's address and answers
there, and serves COV, a BBMD and foreign devices.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from bac_py import BACnetApplication
from bac_py.transport.bip6 import BIP6Transport
from bac_py.types.enums import ObjectType, PropertyIdentifier
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.client import DatagramClient
from protobench.protocols.bacnet_ip.codec import ReadRequest
from protobench.protocols.bacnet_ip.link import socket_vmac
from protobench.protocols.bacnet_ip.sessions import LeanSession
from protobench.protocols.base import StreamSession
from protobench.targets.bacnet import (
    BacnetIpTarget,
    device_config,
    free_udp_port,
    instance_vmac,
)
from protobench.targets.bacnet_objects import add_stress_objects
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.bacnet import exchange, open_op, outcome, served
from tests.support.timing import S, eventually

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

AI1 = ObjectIdentifier(ObjectType.ANALOG_INPUT, 1)
PV = PropertyIdentifier.PRESENT_VALUE


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_each_socket_has_its_own_vmac_and_the_device_knows_each() -> None:
    """600 reads, 64 in flight, over three sockets (no invoke ID reused within the minute).
    bac-py's device answers a VMAC at the address it last heard it from: its cache holds
    each socket's VMAC at that socket's port, so each socket gets its own replies."""
    port = free_udp_port("::1")
    app = BACnetApplication(device_config(400, "::1", port))
    await app.start()
    add_stress_objects(app, 400, drift=False)
    client = DatagramClient("::1", port, "::1", None, 10.0, reuse_after=60.0)
    try:
        assert await client.resolve(2.0) == instance_vmac(400)
        request = ReadRequest(AI1, PV, client.path, expect=61.5)
        window = asyncio.Semaphore(64)

        async def read() -> int:
            async with window:
                return await client.request(request)

        sizes = await asyncio.gather(*(read() for _ in range(600)))
        ports = [lane.sock.getsockname()[1] for lane in client.lanes]
        transport = app._transport
        assert isinstance(transport, BIP6Transport)
        known = {
            vmac: entry.address.port for vmac, entry in transport.vmac_cache.all_entries().items()
        }
    finally:
        client.close()
        await app.stop()
    assert len(sizes) == 600
    assert client.stray == 0
    vmacs = [lane.vmac for lane in client.lanes]
    assert vmacs == [socket_vmac(p) for p in ports]
    assert len(set(vmacs)) == len(ports) == 3
    assert [known.get(vmac or b"") for vmac in vmacs] == ports


async def test_a_bbmd_on_ipv6_serves_foreign_devices_who_is_and_forwards_broadcasts() -> None:
    async with served(BacnetIpTarget(), ipv6=True, bbmd=True) as announced:
        assert announced.url.endswith("?device=400&bbmd=1")
        counted: dict[str, int] = {}
        reader = await open_op(
            announced.url,
            "read-property",
            {"objects": ["analog-input:1"], "expect": 61.5},
            {"foreign_device": True},
        )
        assert isinstance(reader, LeanSession)
        reader.client.count = lambda name, n: counted.update({name: counted.get(name, 0) + n})
        try:
            assert (await exchange(reader))[0] is None
            for _ in range(2):
                error, _ = await outcome(announced.url, "who-is")
                assert error is None
            await eventually(lambda: reader.client.forwarded >= 2, 10 * S, "forwarded broadcasts")
            assert (await exchange(reader))[0] is None
        finally:
            await reader.close()
        assert reader.client.stray == 0
        assert counted["forwarded"] == reader.client.forwarded
        with pytest.raises(OpError) as caught:
            await open_op(announced.url, "read-fdt")
        assert caught.value.error_class == ErrorClass.LOCAL
        assert "Annex U" in caught.value.detail


async def test_a_port_without_a_device_is_refused_and_a_silent_one_times_out() -> None:
    port = free_udp_port("::1")
    with pytest.raises(OpError) as refused:
        await open_op(f"bacnet://[::1]:{port}/", "read-property", op_timeout=1.0)
    assert refused.value.error_class == ErrorClass.REFUSED
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as silent:
        silent.bind(("::1", 0))
        url = f"bacnet://[::1]:{silent.getsockname()[1]}/"
        with pytest.raises(OpError) as quiet:
            await open_op(url, "read-property", op_timeout=0.3)
    assert quiet.value.error_class == ErrorClass.TIMEOUT
    assert "no Virtual-Address-Resolution-ACK" in quiet.value.detail


def ipv6_groups() -> set[str]:
    """The IPv6 multicast groups joined on any interface (``/proc/net/igmp6``)."""
    text = Path("/proc/net/igmp6").read_text()
    groups = set()
    for line in text.splitlines():
        hexa = line.split()[2]
        groups.add(":".join(hexa[i : i + 4] for i in range(0, 32, 4)))
    return groups


@contextlib.contextmanager
def captured_off_loopback() -> Iterator[list[str]]:
    """Packets on the other interfaces that would be ours: from ::1, or UDP to a multicast
    group (tcpdump; the test is skipped where it cannot capture)."""
    if shutil.which("tcpdump") is None:
        pytest.skip("tcpdump is not installed")
    interfaces = [name for name, up in psutil.net_if_stats().items() if up.isup and name != "lo"]
    rule = "ip6 and (src host ::1 or (udp and dst net ff00::/8))"
    dumps = [
        subprocess.Popen(
            ["tcpdump", "-i", name, "-n", "-l", "-p", rule],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in interfaces
    ]
    found: list[str] = []
    try:
        for dump in dumps:
            assert dump.stderr is not None
            said = [dump.stderr.readline() for _ in range(2)]
            if not any("listening on" in line for line in said):
                pytest.skip(f"tcpdump cannot capture here: {' '.join(said).strip()}")
        yield found
    finally:
        for dump in dumps:
            dump.terminate()
            out, _ = dump.communicate(timeout=10)
            found += [line for line in out.splitlines() if line.strip()]


async def test_nothing_leaves_loopback_on_ipv6() -> None:
    """Targets and clients bind ::1; bac-py's broadcasts go to ff01::bac0, interface-local,
    which the kernel never sends out; no socket joins Annex U's link-local group."""
    me = psutil.Process()
    with captured_off_loopback() as leaked:
        async with served(BacnetIpTarget(), ipv6=True, bbmd=True, drift=True) as announced:
            sessions = [
                await open_op(announced.url, "read-property"),
                await open_op(announced.url, "cov"),
                await open_op(announced.url, "who-is"),
                await open_op(announced.url, "write-property", options={"foreign_device": True}),
            ]
            try:
                for session in sessions:
                    if not isinstance(session, StreamSession):
                        assert (await exchange(session))[0] is None
                sockets = me.net_connections(kind="inet6")
                assert len(sockets) >= 5
                assert {c.laddr.ip for c in sockets} == {"::1"}
                groups = ipv6_groups()
                assert "ff01:0000:0000:0000:0000:0000:0000:bac0" in groups
                assert "ff02:0000:0000:0000:0000:0000:0000:bac0" not in groups
            finally:
                for session in sessions:
                    await session.close()
    assert leaked == []


@pytest.mark.parametrize(
    "args", [["bacnet-ip", "--ipv6", "--bbmd"], ["bacnet-router", "--to", "ipv6", "--devices", "2"]]
)
def test_served_ipv6_targets_bind_only_loopback_and_send_nothing_out(args: list[str]) -> None:
    command = [sys.executable, "-m", "protobench", "serve", *args, "--port", "0", "--announce"]
    with (
        captured_off_loopback() as leaked,
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child,
    ):
        try:
            assert child.stdout is not None
            assert child.stdout.readline()
            sockets = psutil.Process(child.pid).net_connections(kind="inet")
            assert {c.laddr.ip for c in sockets} <= {"::1", "127.0.0.1"}
            assert "::1" in {c.laddr.ip for c in sockets}
        finally:
            child.terminate()
            child.wait(timeout=10)
    assert leaked == []
