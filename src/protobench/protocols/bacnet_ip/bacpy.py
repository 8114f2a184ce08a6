"""bac-py's :class:`bac_py.Client` as the control path starts it (COV, Who-Is, BBMD tables,
route checks, discovery), on BACnet/IP or BACnet/IPv6.

One place configures it: bound to the options' interface (the loopback
address of the target's family unless set) on an ephemeral port, its
broadcasts sent to the options' broadcast address (IPv4: 127.255.255.255) or
multicast group (IPv6: ``ff01::bac0``, interface-local, a scope the kernel
never sends off the host), registered as a foreign device with a BBMD when
asked, with a route to the target's remote network through the target's
address.

**BACnet/IPv6.** bac-py's Client cannot reach a B/IPv6 device by its address:
its transport sends only to VMACs, and resolves a VMAC it does not know with
a multicast Address-Resolution, which loopback does not carry. So the device's
VMAC is learnt with a Virtual-Address-Resolution (unicast,
:meth:`.client.DatagramClient.resolve`) and put into the transport's VMAC
cache (:meth:`StartedClient.refresh`, again before each call that may come
after the cache's five-minute lifetime); the device is addressed by its VMAC
(:attr:`StartedClient.device`). bac-py keeps no public handle on its
transport, so the cache is reached through the application's ``_transport``,
as bac-py's own BBMD benchmark attaches its BBMD. A routed target behind a
B/IPv6 router is served by the lean operations only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from bac_py import Client, DeviceConfig
from bac_py.network.address import BACnetAddress, BIP6Address
from bac_py.transport.bip6 import BIP6Transport

from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.bacnet_ip.client import DatagramClient
from protobench.protocols.bacnet_ip.errors import from_exception
from protobench.protocols.bacnet_ip.options import BacnetIpOptions, local_address
from protobench.vocab.errors import ErrorClass, OpError


@dataclass
class StartedClient:
    """A started bac-py client and how its calls name the target's device."""

    client: Client
    device: str | BACnetAddress
    """The device's address for the client's calls: ``HOST:PORT``, ``NET:HEXMAC``, or on
    BACnet/IPv6 the device's VMAC."""
    peer: tuple[bytes, BIP6Address] | None = None
    """On BACnet/IPv6: the device's VMAC and address, as put into the client's cache."""

    def refresh(self) -> None:
        """Put the device's VMAC into the client's cache again (BACnet/IPv6; else nothing)."""
        if self.peer is None:
            return
        transport = self.client.app._transport
        if isinstance(transport, BIP6Transport):
            transport.vmac_cache.put(*self.peer)

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.__aexit__(None, None, None)


async def start_client(
    target: TargetAddress,
    options: BacnetIpOptions,
    instance: int,
    wait: float,
    bbmd: str | None = None,
) -> StartedClient:
    """Start a bac-py client for ``target`` (registered with ``bbmd`` when given).

    ``wait`` bounds the start, the registration and each confirmed request
    (split over ``options.retries`` resends). Failures are :class:`OpError`.
    """
    logging.getLogger("bac_py").setLevel(logging.ERROR)
    if target.ipv6 and target.routed:
        raise OpError(
            ErrorClass.LOCAL,
            "behind a BACnet/IPv6 router only the lean operations run (read-property, "
            "write-property, read-property-multiple, write-property-multiple, object-list)",
        )
    vmac = await _device_vmac(target, options, wait) if target.ipv6 else None
    config = DeviceConfig(
        instance_number=instance,
        interface=local_address(options, target.ipv6),
        port=0,
        broadcast_address=options.broadcast_address,
        multicast_address=options.multicast_address,
        apdu_timeout=max(1, int(wait * 1000 / (options.retries + 1))),
        apdu_retries=options.retries,
    )
    client = Client(config, bbmd_address=bbmd, bbmd_ttl=options.bbmd_ttl)
    try:
        async with asyncio.timeout(wait):
            await client.__aenter__()
        if bbmd is not None and not await client.wait_for_registration(wait):
            raise OpError(ErrorClass.TIMEOUT, f"foreign-device registration with {bbmd} failed")
        if target.dnet is not None:
            client.add_route(target.dnet, target.endpoint)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)
        if isinstance(exc, Exception):
            raise from_exception(exc) from exc
        raise
    if vmac is None:
        return StartedClient(client, target.device_address)
    started = StartedClient(
        client, BACnetAddress(mac_address=vmac), (vmac, BIP6Address(target.host, target.port))
    )
    started.refresh()
    return started


async def _device_vmac(target: TargetAddress, options: BacnetIpOptions, wait: float) -> bytes:
    """The VMAC of the B/IPv6 device at the target's address (Virtual-Address-Resolution)."""
    try:
        lean = DatagramClient(target.host, target.port, local_address(options, True), None, wait)
    except OSError as exc:
        raise OpError(ErrorClass.CONNECT, f"cannot open a UDP socket: {exc}") from exc
    try:
        return await lean.resolve(wait)
    finally:
        lean.close()
