"""Embedded BACnet/IP targets: the stress server, behind a router, and with a BBMD.

* ``bacnet-ip``: the 40-object stress server (:mod:`.bacnet_objects`), device
  400, announced as ``bacnet://HOST:PORT/?device=400`` (``&bbmd=1`` with
  ``--bbmd``).
* ``bacnet-router``: a bac-py router between networks 1 and 2 (device 500)
  with a BBMD on its network-1 port, and the stress server (device 501) alone
  on network 2, announced as
  ``bacnet://HOST:PORT/?dnet=2&dadr=HEXMAC&device=501&bbmd=1``, where
  HOST:PORT is the router's network-1 port and HEXMAC the server's address.
* ``bacnet-bbmd``: the stress server (device 551) with a BBMD on its own
  port, announced as ``bacnet://HOST:PORT/?device=551&bbmd=1``.

Every application binds HOST (a 127.x address) and broadcasts to
127.255.255.255, never to the global broadcast. Port 0 picks free ports
(bac-py has no public accessor for a bound port). bac-py's per-request
warnings (an unknown property read, say) are raised to errors only, so that
a workload of failing requests does not become a log flood.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Callable
from typing import ClassVar

import bac_py
from bac_py import BACnetApplication, DeviceConfig, RouterConfig, RouterPortConfig
from bac_py.app.application import BBMDConfig
from bac_py.objects.analog import AnalogInputObject
from bac_py.transport.bip import BIPTransport
from pydantic import Field

from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.base import StrictModel
from protobench.targets.bacnet_objects import OBJECT_COUNT, add_stress_objects, drift_forever
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.vocab.fields import Duration

BROADCAST = "127.255.255.255"
BIND_TRIES = 5
MAX_DEVICE = 4_194_302


class BacnetServeOptions(StrictModel):
    """Options of ``protobench serve bacnet-ip``."""

    device_instance: int = Field(
        default=400, ge=0, le=MAX_DEVICE, description="the device's instance number"
    )
    drift: bool = Field(
        default=False,
        description="move the analog inputs' present values so that COV notifications flow",
    )
    drift_interval: Duration = Field(default=1.0, description="how often they move")
    bbmd: bool = Field(
        default=False,
        description="attach a BBMD to the device's port (clients may register as foreign devices)",
    )


class BacnetBbmdServeOptions(BacnetServeOptions):
    """Options of ``protobench serve bacnet-bbmd``: a BBMD, device 551."""

    device_instance: int = Field(
        default=551, ge=0, le=MAX_DEVICE, description="the device's instance number"
    )
    bbmd: bool = Field(default=True, description="attach a BBMD to the device's port")


class BacnetRouterServeOptions(StrictModel):
    """Options of ``protobench serve bacnet-router``."""

    device_instance: int = Field(
        default=501, ge=0, le=MAX_DEVICE, description="the stress server's instance number"
    )
    router_instance: int = Field(
        default=500, ge=0, le=MAX_DEVICE, description="the router's device instance number"
    )
    network: int = Field(
        default=2, ge=1, le=65534, description="the remote network, where the stress server sits"
    )
    local_network: int = Field(
        default=1, ge=1, le=65534, description="the router's network on the announced port"
    )
    drift: bool = Field(
        default=False,
        description="move the analog inputs' present values so that COV notifications flow",
    )
    drift_interval: Duration = Field(default=1.0, description="how often they move")


def check_host(host: str) -> None:
    """Only IPv4 loopback hosts: bac-py's broadcasts then stay on 127.255.255.255."""
    try:
        loopback = ipaddress.IPv4Address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"BACnet/IP targets bind an IPv4 loopback address (127.x.x.x), not {host!r}"
        )


def free_udp_port(host: str) -> int:
    """A UDP port free on ``host`` right now (bac-py binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def started(
    make: Callable[[int], BACnetApplication], port: int, host: str
) -> AsyncIterator[tuple[BACnetApplication, int]]:
    """A started application and its port (0: a free port, retried if taken meanwhile)."""
    for attempt in range(BIND_TRIES):
        chosen = port or free_udp_port(host)
        app = make(chosen)
        try:
            await app.start()
        except OSError as exc:
            with contextlib.suppress(Exception):
                await app.stop()
            if port or exc.errno != errno.EADDRINUSE or attempt == BIND_TRIES - 1:
                raise
            continue
        try:
            yield app, chosen
        finally:
            await app.stop()
        return


def device_config(instance: int, host: str, port: int) -> DeviceConfig:
    return DeviceConfig(instance, interface=host, port=port, broadcast_address=BROADCAST)


def kind(device: int, where: str) -> str:
    return (
        f"bac-py {bac_py.__version__} stress server, {OBJECT_COUNT} objects, device {device}{where}"
    )


async def serve_forever(
    app: BACnetApplication, drift: bool, interval: float, inputs: list[AnalogInputObject]
) -> None:
    if drift:
        await drift_forever(app, inputs, interval)
    await asyncio.Event().wait()


class BacnetIpTarget(EmbeddedTarget):
    """The 40-object stress server on BACnet/IP."""

    name = "bacnet-ip"
    description = "bac-py 40-object stress server (device 400) on BACnet/IP"
    default_port = 47808
    options: ClassVar[type[StrictModel]] = BacnetServeOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, BacnetServeOptions)
        check_host(host)
        logging.getLogger("bac_py").setLevel(logging.ERROR)
        instance = options.device_instance
        async with started(
            lambda p: BACnetApplication(device_config(instance, host, p)), port, host
        ) as (
            app,
            bound,
        ):
            inputs = add_stress_objects(app, instance, options.drift)
            bbmd = None
            if options.bbmd:
                # bac-py has no public way to attach a BBMD to a plain device. A
                # one-port RouterConfig(bbmd_config=BBMDConfig()) attaches one, but
                # that application answers local clients with DNET/SNET-addressed
                # NPDUs, which bac-py's own Client ignores. So this uses the
                # transport's attach_bbmd() through the private attribute, as
                # bac-py's BBMD benchmark does.
                transport = app._transport
                assert isinstance(transport, BIPTransport)
                await transport.attach_bbmd()
                bbmd = f"{host}:{bound}"
            address = TargetAddress(host, bound, device=instance, bbmd=bbmd)
            ready(Announcement(address.url(), kind(instance, " with BBMD" if bbmd else "")))
            await serve_forever(app, options.drift, options.drift_interval, inputs)


class BacnetBbmdTarget(BacnetIpTarget):
    """The stress server with a BBMD on its port."""

    name = "bacnet-bbmd"
    description = "bac-py 40-object stress server (device 551) with a BBMD"
    options: ClassVar[type[StrictModel]] = BacnetBbmdServeOptions


class BacnetRouterTarget(EmbeddedTarget):
    """A router between two networks, with the stress server on the remote one."""

    name = "bacnet-router"
    description = (
        "bac-py router (networks 1 and 2, BBMD on 1) with the stress server (device 501) on 2"
    )
    default_port = 47808
    options: ClassVar[type[StrictModel]] = BacnetRouterServeOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, BacnetRouterServeOptions)
        check_host(host)
        logging.getLogger("bac_py").setLevel(logging.ERROR)
        instance = options.device_instance
        async with started(
            lambda p: BACnetApplication(device_config(instance, host, p)), 0, host
        ) as (
            server,
            server_port,
        ):
            inputs = add_stress_objects(server, instance, options.drift)

            def make_router(chosen: int) -> BACnetApplication:
                ports = [
                    RouterPortConfig(
                        port_id=1,
                        network_number=options.local_network,
                        interface=host,
                        port=chosen,
                        broadcast_address=BROADCAST,
                        bbmd_config=BBMDConfig(),
                    ),
                    RouterPortConfig(
                        port_id=2,
                        network_number=options.network,
                        interface=host,
                        port=free_udp_port(host),
                        broadcast_address=BROADCAST,
                    ),
                ]
                config = device_config(options.router_instance, host, chosen)
                config.router_config = RouterConfig(ports=ports, application_port_id=1)
                return BACnetApplication(config)

            async with started(make_router, port, host) as (_, router_port):
                mac = socket.inet_aton(host) + server_port.to_bytes(2, "big")
                address = TargetAddress(
                    host,
                    router_port,
                    device=instance,
                    dnet=options.network,
                    dadr=mac,
                    bbmd=f"{host}:{router_port}",
                )
                where = f" on network {options.network} behind a router"
                ready(Announcement(address.url(), kind(instance, where)))
                await serve_forever(server, options.drift, options.drift_interval, inputs)
