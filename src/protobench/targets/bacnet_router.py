"""``protobench serve bacnet-router``: a bac-py router with stress servers on its remote network.

The router (device 500) has a BACnet/IP port on network 1 (``--local-network``),
with a BBMD, at the announced address, and a port on network 2
(``--network``) of the kind ``--to`` names, where ``--devices`` stress
servers (:mod:`.bacnet_objects`; devices 501, 502...) sit:

* ``ip`` (default): BACnet/IP, each server on its own 127.0.0.1 port; its
  MAC (``dadr``) is its IPv4 address and port (``7f000001877e``);
* ``ipv6``: BACnet/IPv6 (Annex U) on ``[::1]``, each server's VMAC its device
  instance in three bytes (501: ``0001f5``). The router's IPv6 port has a BBMD
  and each server registers with it as a foreign device: the registration
  (renewed every 30 s) is how the router learns the server's VMAC and
  address, since loopback carries no multicast Address-Resolution; it also
  brings the server the broadcasts of network 2 (a Who-Is through the
  router);
* ``sc``: BACnet/SC, a hub (bac-py's ``SCHubFunction``) on 127.0.0.1 that the
  router's port and each server connect to, mutual TLS 1.3 with a mock CA
  generated at start (``--no-tls``: plain WebSocket); each server's VMAC is
  ``02cc000000NN`` (bac-py's mixed BIP/SC scenario's node VMACs).

This is bac-py's two mixed-transport scenarios (BACnet/IP client, router,
BACnet/IPv6 device; BACnet/IP client, router, BACnet/SC nodes) with real
devices behind the router. The announced URL names the first server,
``bacnet://127.0.0.1:PORT/?dnet=2&dadr=HEXMAC&device=501&bbmd=1``; the
announcement's ``kind`` lists every server's ``dadr``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import tempfile
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AsyncExitStack
from typing import Any, ClassVar, Literal

import bac_py
from bac_py import BACnetApplication, DeviceConfig, RouterConfig, RouterPortConfig
from bac_py.app.application import BBMDConfig
from bac_py.transport.sc import SCTransport, SCTransportConfig
from bac_py.transport.sc.vmac import SCVMAC
from pydantic import Field

from protobench.protocols.bacnet_ip.address import TargetAddress, join_endpoint
from protobench.protocols.base import StrictModel
from protobench.targets.bacnet import (
    BROADCAST,
    IPV6_HOST,
    MAX_DEVICE,
    MULTICAST,
    Drifting,
    check_host,
    device_config,
    free_udp_port,
    instance_vmac,
    serve_forever,
    started,
)
from protobench.targets.bacnet_objects import OBJECT_COUNT, add_stress_objects
from protobench.targets.bacnet_sc import sc_tls, start_hub
from protobench.targets.base import Announcement, EmbeddedTarget, Ready, ServeError
from protobench.tlsutil import MockPki, generate
from protobench.vocab.fields import Duration

RemoteKind = Literal["ip", "ipv6", "sc"]
SC_VMAC_PREFIX = bytes.fromhex("02cc000000")
REGISTRATION_TTL = 60
"""Seconds a BACnet/IPv6 server's foreign-device registration lasts (renewed at half)."""
SC_CONNECT = 10.0
"""Seconds an SC server may take to connect to the hub."""
HUB_STOP = 2.0
"""Seconds the SC hub may take to stop."""


class BacnetRouterServeOptions(StrictModel):
    """Options of ``protobench serve bacnet-router``."""

    device_instance: int = Field(
        default=501,
        ge=0,
        le=MAX_DEVICE,
        description="the first stress server's instance number (the next ones count up)",
    )
    router_instance: int = Field(
        default=500, ge=0, le=MAX_DEVICE, description="the router's device instance number"
    )
    network: int = Field(
        default=2, ge=1, le=65534, description="the remote network, where the stress servers sit"
    )
    local_network: int = Field(
        default=1, ge=1, le=65534, description="the router's network on the announced port"
    )
    to: RemoteKind = Field(
        default="ip",
        description="the remote network's data link: ip (BACnet/IP), ipv6 (BACnet/IPv6), sc",
    )
    devices: int = Field(default=1, ge=1, le=16, description="stress servers on the remote network")
    tls: bool = Field(
        default=True,
        description="--to sc: mutual TLS 1.3 between hub, router and servers (generated CA)",
    )
    drift: bool = Field(
        default=False,
        description="move the analog inputs' present values so that COV notifications flow",
    )
    drift_interval: Duration = Field(default=1.0, description="how often they move")


def sc_vmac(number: int) -> bytes:
    """The BACnet/SC VMAC of stress server ``number`` (1-based): ``02cc000000NN``."""
    return SC_VMAC_PREFIX + bytes([number])


class BacnetRouterTarget(EmbeddedTarget):
    """A router from BACnet/IP to a remote network of stress servers."""

    name = "bacnet-router"
    description = (
        "bac-py router (BACnet/IP network 1 with a BBMD) to stress servers (device 501...) "
        "on network 2: BACnet/IP, --to ipv6 or --to sc"
    )
    default_port = 47808
    options: ClassVar[type[StrictModel]] = BacnetRouterServeOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, BacnetRouterServeOptions)
        check_host(host)
        if ":" in host:
            raise ServeError(
                "serve bacnet-router: the announced port is BACnet/IP: bind 127.x, not an IPv6 "
                "address (--to ipv6 puts the devices on ::1)"
            )
        logging.getLogger("bac_py").setLevel(logging.ERROR)
        async with AsyncExitStack() as stack:
            remote = Remote(options, host)
            await stack.enter_async_context(remote.prepared())
            await remote.start_devices(stack)

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
                    remote.router_port(),
                ]
                config = DeviceConfig(
                    options.router_instance,
                    interface=host,
                    port=chosen,
                    broadcast_address=BROADCAST,
                )
                config.router_config = RouterConfig(ports=ports, application_port_id=1)
                return RouterApplication(config)

            _, router_port = await stack.enter_async_context(started(make_router, port, host))
            await remote.join_router()
            first = TargetAddress(
                host,
                router_port,
                device=options.device_instance,
                dnet=options.network,
                dadr=remote.macs[0],
                bbmd=join_endpoint(host, router_port),
            )
            ready(Announcement(first.url(), remote.kind()))
            await serve_forever(remote.devices, options.drift, options.drift_interval)


class _ScStartedOnce:
    """While a router starts, :meth:`SCTransport.start` starts a transport only once.

    bac-py 1.5.7 starts a router's BACnet/SC port twice: ``BACnetApplication._start_router_mode``
    starts its ``SCTransport`` and waits for the hub connection, then ``NetworkRouter.start``
    starts every port's transport again. ``SCTransport.start`` is not idempotent: the second start
    runs a second hub-connector loop, which connects to the hub again with the same VMAC; the hub
    keeps the newer connection, and the first loop and both ends of its connection are left
    unreferenced. Whenever the garbage collector next runs a full collection (after another test
    in the same process, or under load) it destroys them ("Task was destroyed but it is pending!
    SCConnection._receive_loop"); the first loop then sees a disconnection and clears the
    connector's current connection, so the router loses the hub until it reconnects and drops
    what it routes to network 2 meanwhile: a request through the router gets no reply.
    """

    original: ClassVar[Callable[[SCTransport], Coroutine[Any, Any, None]]] = SCTransport.start
    starting: ClassVar[int] = 0
    """Routers starting now (the class's ``start`` is :func:`_start_sc_once` while any is)."""
    started: ClassVar[weakref.WeakSet[SCTransport]] = weakref.WeakSet()

    @classmethod
    @contextlib.contextmanager
    def active(cls) -> Iterator[None]:
        cls.starting += 1
        SCTransport.start = _start_sc_once  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            cls.starting -= 1
            if not cls.starting:
                SCTransport.start = cls.original  # type: ignore[method-assign,assignment]
                cls.started.clear()


async def _start_sc_once(transport: SCTransport, /) -> None:
    """``SCTransport.start``, a no-op on a transport already started (:class:`_ScStartedOnce`)."""
    if transport in _ScStartedOnce.started:
        return
    _ScStartedOnce.started.add(transport)
    await _ScStartedOnce.original(transport)


class RouterApplication(BACnetApplication):
    """bac-py's application in router mode, its BACnet/SC port started once (bac-py 1.5.7 starts
    it twice and then loses its hub connection: :class:`_ScStartedOnce`)."""

    async def start(self) -> None:
        with _ScStartedOnce.active():
            await super().start()


def server(instance: int, host: str, port: int) -> BACnetApplication:
    """A stress server's application (its objects are added once it has started)."""
    return BACnetApplication(device_config(instance, host, port))


class Remote:
    """The router's remote network: its port's configuration and the servers on it."""

    def __init__(self, options: BacnetRouterServeOptions, host: str) -> None:
        self.options = options
        self.host = host
        self.devices: Drifting = []
        self.macs: list[bytes] = []
        self.instances = [options.device_instance + k for k in range(options.devices)]
        self.port6 = 0
        """The router's BACnet/IPv6 port (``--to ipv6``)."""
        self.hub_uri = ""
        self.pki: MockPki | None = None

    @contextlib.asynccontextmanager
    async def prepared(self) -> AsyncIterator[None]:
        """What the servers and the router's port need first: the SC hub and its PKI."""
        if self.options.to != "sc":
            yield
            return
        with contextlib.ExitStack() as files:
            if self.options.tls:
                workdir = files.enter_context(tempfile.TemporaryDirectory(prefix="protobench-sc-"))
                names = ["hub", "router"] + [f"node{k}" for k in range(1, self.options.devices + 1)]
                self.pki = generate(workdir, names)
            hub_pair = self.pki.leaves["hub"] if self.pki else None
            hub, bound = await start_hub(self.host, 0, sc_tls(self.pki, hub_pair))
            self.hub_uri = f"{'wss' if self.pki else 'ws'}://{self.host}:{bound}"
            try:
                yield
            finally:
                # bac-py's hub waits for every TLS connection's closing handshake, up to
                # asyncio's 30 s, which a node that stopped reading never completes.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(HUB_STOP):
                        await hub.stop()

    def _sc_config(self, name: str, vmac: bytes | None) -> SCTransportConfig:
        pair = self.pki.leaves.get(name) if self.pki else None
        return SCTransportConfig(
            primary_hub_uri=self.hub_uri,
            tls_config=sc_tls(self.pki, pair),
            vmac=SCVMAC(vmac) if vmac is not None else None,
            min_reconnect_time=0.5,
            max_reconnect_time=5.0,
            connect_timeout=SC_CONNECT,
        )

    async def start_devices(self, stack: AsyncExitStack) -> None:
        """Start the stress servers (BACnet/IP and IPv6 ones on free ports)."""
        kind = self.options.to
        for number, instance in enumerate(self.instances, start=1):
            if kind == "sc":
                config = DeviceConfig(
                    instance, sc_config=self._sc_config(f"node{number}", sc_vmac(number))
                )
                app = BACnetApplication(config)
                await app.start()
                stack.push_async_callback(app.stop)
                self.macs.append(sc_vmac(number))
            else:
                where = IPV6_HOST if kind == "ipv6" else self.host

                def make(
                    chosen: int, instance: int = instance, where: str = where
                ) -> BACnetApplication:
                    return BACnetApplication(device_config(instance, where, chosen))

                app, bound = await stack.enter_async_context(started(make, 0, where))
                if kind == "ipv6":
                    self.macs.append(instance_vmac(instance))
                else:
                    self.macs.append(socket.inet_aton(self.host) + bound.to_bytes(2, "big"))
            self.devices.append((app, add_stress_objects(app, instance, self.options.drift)))

    def router_port(self) -> RouterPortConfig:
        """The router's port on the remote network."""
        number = self.options.network
        if self.options.to == "sc":
            return RouterPortConfig(
                port_id=2, network_number=number, sc_config=self._sc_config("router", None)
            )
        if self.options.to == "ipv6":
            self.port6 = free_udp_port(IPV6_HOST)
            return RouterPortConfig(
                port_id=2,
                network_number=number,
                interface=IPV6_HOST,
                port=self.port6,
                ipv6=True,
                multicast_address=MULTICAST,
                bbmd_config=BBMDConfig(),
            )
        return RouterPortConfig(
            port_id=2,
            network_number=number,
            interface=self.host,
            port=free_udp_port(self.host),
            broadcast_address=BROADCAST,
        )

    async def join_router(self) -> None:
        """BACnet/IPv6 servers register with the router's BBMD (the router learns their VMACs)."""
        if self.options.to != "ipv6":
            return
        bbmd = join_endpoint(IPV6_HOST, self.port6)
        for app, _ in self.devices:
            await app.register_as_foreign_device(bbmd, REGISTRATION_TTL)
            if not await app.wait_for_registration(SC_CONNECT):
                raise RuntimeError(f"a stress server could not register with the router at {bbmd}")

    def kind(self) -> str:
        names = {"ip": "BACnet/IP", "ipv6": "BACnet/IPv6", "sc": f"BACnet/SC via {self.hub_uri}"}
        servers = ", ".join(
            f"device {instance} dadr={mac.hex()}"
            for instance, mac in zip(self.instances, self.macs, strict=True)
        )
        return (
            f"bac-py {bac_py.__version__} router to {names[self.options.to]} network "
            f"{self.options.network}: {len(self.instances)} stress server(s) of {OBJECT_COUNT} "
            f"objects ({servers})"
        )
