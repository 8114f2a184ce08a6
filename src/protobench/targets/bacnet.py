"""Embedded BACnet targets: the stress server on BACnet/IP or BACnet/IPv6, and with a BBMD.

* ``bacnet-ip``: the 40-object stress server (:mod:`.bacnet_objects`), device
  400, announced as ``bacnet://HOST:PORT/?device=400`` (``&bbmd=1`` with
  ``--bbmd``). With ``--ipv6`` (or an IPv6 ``--host``) it is a BACnet/IPv6
  device (Annex U) at ``[::1]``, announced as ``bacnet://[::1]:PORT/?device=400``,
  its VMAC the device instance in three bytes (400: ``000190``).
* ``bacnet-bbmd``: the stress server (device 551) with a BBMD on its own
  port, announced as ``bacnet://HOST:PORT/?device=551&bbmd=1``.

The router (``bacnet-router``) is :mod:`.bacnet_router`. Every application
binds a loopback address: 127.x with 127.255.255.255 as its broadcast
address, never the global broadcast; or ``::1`` with the interface-local
multicast group ``ff01::bac0`` as its broadcast address (bac-py's default,
the link-local ``ff02::bac0``, would send its broadcasts out on the network
interface; the kernel keeps interface-local multicast on the host). Port 0
picks free ports (bac-py has no public accessor for a bound port). bac-py's
per-request warnings (an unknown property read, say) are raised to errors
only, so that a workload of failing requests does not become a log flood.
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
from bac_py import BACnetApplication, DeviceConfig
from bac_py.objects.analog import AnalogInputObject
from bac_py.transport.bip import BIPTransport
from bac_py.transport.bip6 import BIP6Transport
from pydantic import Field

from protobench.hostutil import free_port
from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.base import StrictModel
from protobench.targets.bacnet_objects import OBJECT_COUNT, add_stress_objects, drift_forever
from protobench.targets.base import Announcement, EmbeddedTarget, Ready, ServeError
from protobench.vocab.fields import Duration

BROADCAST = "127.255.255.255"
MULTICAST = "ff01::bac0"
"""The broadcast group of every BACnet/IPv6 application: interface-local (never off the host)."""
IPV6_HOST = "::1"
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
    ipv6: bool = Field(
        default=False,
        description="serve on BACnet/IPv6 (Annex U) at [::1] instead of BACnet/IP",
    )


class BacnetBbmdServeOptions(BacnetServeOptions):
    """Options of ``protobench serve bacnet-bbmd``: a BBMD, device 551."""

    device_instance: int = Field(
        default=551, ge=0, le=MAX_DEVICE, description="the device's instance number"
    )
    bbmd: bool = Field(default=True, description="attach a BBMD to the device's port")


def check_host(host: str) -> None:
    """Only loopback hosts: bac-py's broadcasts then stay on 127.255.255.255 (or ``ff01::bac0``)."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ServeError(f"BACnet targets bind a loopback address (127.x.x.x or ::1), not {host!r}")


def free_udp_port(host: str) -> int:
    """A UDP port free on ``host`` right now (bac-py binds it a moment later)."""
    return free_port(host, socket.SOCK_DGRAM)


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
    """An application on ``host:port``: BACnet/IP, or BACnet/IPv6 for an IPv6 host (its VMAC
    then :func:`instance_vmac`)."""
    if ":" in host:
        return DeviceConfig(
            instance,
            interface=host,
            port=port,
            ipv6=True,
            multicast_address=MULTICAST,
            vmac=instance_vmac(instance),
        )
    return DeviceConfig(instance, interface=host, port=port, broadcast_address=BROADCAST)


def instance_vmac(instance: int) -> bytes:
    """The BACnet/IPv6 VMAC of device ``instance``: the instance in three bytes."""
    return instance.to_bytes(3, "big")


def kind(device: int, where: str) -> str:
    return (
        f"bac-py {bac_py.__version__} stress server, {OBJECT_COUNT} objects, device {device}{where}"
    )


Drifting = list[tuple[BACnetApplication, list[AnalogInputObject]]]
"""Devices and their analog inputs, which drift when asked."""


async def serve_forever(devices: Drifting, drift: bool, interval: float) -> None:
    if drift:
        await asyncio.gather(*(drift_forever(app, inputs, interval) for app, inputs in devices))
    await asyncio.Event().wait()


class BacnetIpTarget(EmbeddedTarget):
    """The 40-object stress server on BACnet/IP (or BACnet/IPv6)."""

    name = "bacnet-ip"
    description = "bac-py 40-object stress server (device 400) on BACnet/IP (--ipv6: BACnet/IPv6)"
    default_port = 47808
    options: ClassVar[type[StrictModel]] = BacnetServeOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, BacnetServeOptions)
        host = host.strip("[]")
        check_host(host)
        if options.ipv6 and ":" not in host:
            host = IPV6_HOST
        logging.getLogger("bac_py").setLevel(logging.ERROR)
        instance = options.device_instance
        async with started(
            lambda p: BACnetApplication(device_config(instance, host, p)), port, host
        ) as (
            app,
            bound,
        ):
            inputs = add_stress_objects(app, instance, options.drift)
            address = TargetAddress(host, bound, device=instance)
            if options.bbmd:
                # bac-py has no public way to attach a BBMD to a plain device. A
                # one-port RouterConfig(bbmd_config=BBMDConfig()) attaches one, but
                # that application answers local clients with DNET/SNET-addressed
                # NPDUs, which bac-py's own Client ignores. So this uses the
                # transport's attach_bbmd() through the private attribute, as
                # bac-py's BBMD benchmark does.
                transport = app._transport
                assert isinstance(transport, BIPTransport | BIP6Transport)
                await transport.attach_bbmd()
                address = TargetAddress(host, bound, device=instance, bbmd=address.endpoint)
            where = " on BACnet/IPv6" if address.ipv6 else ""
            where += " with BBMD" if options.bbmd else ""
            ready(Announcement(address.url(), kind(instance, where)))
            await serve_forever([(app, inputs)], options.drift, options.drift_interval)


class BacnetBbmdTarget(BacnetIpTarget):
    """The stress server with a BBMD on its port."""

    name = "bacnet-bbmd"
    description = "bac-py 40-object stress server (device 551) with a BBMD"
    options: ClassVar[type[StrictModel]] = BacnetBbmdServeOptions
