"""Sessions of the control-path operations, on bac-py's :class:`bac_py.Client`.

``cov``, ``who-is``, ``read-fdt``, ``read-bdt`` and ``route-check`` are rare
(one subscription, or one exchange every few seconds), so they use bac-py's
full client (:mod:`.bacpy`: bound to loopback, broadcasting on loopback,
reaching a routed device through ``Client.add_route`` and a BACnet/IPv6
device by its VMAC): its COV callbacks, its foreign-device registration and
its BVLC and network-layer services. BACnet/IPv6 (Annex U) has no
Read-Broadcast-Distribution-Table nor Read-Foreign-Device-Table, so
``read-fdt`` and ``read-bdt`` need a BACnet/IP target.

On loopback a device that answers Who-Is with a broadcast on its own port
(bac-py does) is never heard by a client on an ephemeral port; ``who-is`` and
``route-check`` therefore register their client as a foreign device with the
target's BBMD, which forwards those broadcasts to it. Without a BBMD,
``who-is`` is sent to the device's address, and counts only when the device
answers the asker (BACpypes3 does).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.address import TargetAddress
from protobench.protocols.bacnet_ip.bacpy import StartedClient, start_client
from protobench.protocols.bacnet_ip.errors import from_exception
from protobench.protocols.bacnet_ip.inventory import read_inventory
from protobench.protocols.bacnet_ip.objects import expand_all, object_name, parse_selector
from protobench.protocols.bacnet_ip.options import (
    BacnetIpOptions,
    CovParams,
    RouteCheckParams,
    TableParams,
    WhoIsParams,
)
from protobench.protocols.bacnet_ip.sessions import open_client
from protobench.protocols.base import AsyncSession, Session, SessionContext, StreamSession
from protobench.vocab.errors import ErrorClass, OpError
from protobench.vocab.recorder import Recorder

if TYPE_CHECKING:
    from bac_py.network.address import BACnetAddress
    from bac_py.services.cov import COVNotificationRequest


CLIENT_INSTANCE_BASE = 3_000_000
PROCESS_ID_BASE = 9000
RETRY_PAUSE = 1.0


def client_instance(ctx: SessionContext) -> int:
    """A device instance for the session's client, distinct per group and session."""
    return CLIENT_INSTANCE_BASE + (zlib.crc32(ctx.group.encode()) % 1000) * 1000 + ctx.index % 1000


async def guarded[T](call: Awaitable[T], limit: float, label: str = "") -> T:
    """Await a bac-py call for at most ``limit`` seconds, mapping failures to :class:`OpError`.

    ``label`` (what was asked, e.g. ``subscribe-cov analog-input:1``) starts the message.
    """
    try:
        async with asyncio.timeout(limit):
            return await call
    except Exception as exc:
        error = from_exception(exc)
        if label:
            error = OpError(error.error_class, f"{label}: {error.detail}", error.code)
        raise error from exc


async def open_bacpy_client(
    ctx: SessionContext, target: TargetAddress, options: BacnetIpOptions, bbmd: str | None
) -> StartedClient:
    """Start the session's bac-py client (registered with ``bbmd`` when given)."""
    return await start_client(target, options, client_instance(ctx), ctx.timeout, bbmd)


def bbmd_of(target: TargetAddress, options: BacnetIpOptions, op: str) -> str:
    bbmd = options.bbmd or target.bbmd
    if bbmd is None:
        raise OpError(
            ErrorClass.LOCAL, f"{op} needs a BBMD: bbmd=1 in the target URL or the bbmd option"
        )
    return bbmd


class BacpyClientSession:
    """A session owning one started bac-py client."""

    def __init__(self, started: StartedClient, target: TargetAddress, timeout: float) -> None:
        self.started = started
        self.client = started.client
        self.target = target
        self.timeout = timeout
        self._closed = False

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.started.stop()


class CovSession(BacpyClientSession, StreamSession):
    """One COV subscription, renewed before it expires; notifications are counted."""

    def __init__(
        self,
        started: StartedClient,
        target: TargetAddress,
        timeout: float,
        oid: ObjectIdentifier,
        params: CovParams,
        process_id: int,
    ) -> None:
        super().__init__(started, target, timeout)
        self.oid = oid
        self.params = params
        self.process_id = process_id
        self.renew = params.renew if params.renew is not None else params.lifetime / 2
        self._recorder: Recorder | None = None

    def _notified(self, notification: COVNotificationRequest, source: BACnetAddress) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        if notification.monitored_object_identifier != self.oid:
            got = object_name(notification.monitored_object_identifier)
            recorder.error(
                OpError(
                    ErrorClass.VALIDATION,
                    f"notification for {got}, subscribed to {object_name(self.oid)}",
                )
            )
            return
        recorder.count("notifications")

    async def run(self, recorder: Recorder) -> None:
        self._recorder = recorder
        while True:
            start = time.perf_counter_ns()
            self.started.refresh()
            try:
                await guarded(
                    self.client.subscribe_cov_ex(
                        self.started.device,
                        self.oid,
                        self.process_id,
                        confirmed=self.params.confirmed,
                        lifetime=max(1, round(self.params.lifetime)),
                        callback=self._notified,
                    ),
                    self.timeout,
                    f"subscribe-cov {object_name(self.oid)}",
                )
            except OpError as exc:
                recorder.error(exc)
                await asyncio.sleep(RETRY_PAUSE)
                continue
            recorder.record(time.perf_counter_ns() - start)
            await asyncio.sleep(self.renew)

    async def close(self) -> None:
        if not self._closed:
            with contextlib.suppress(Exception):
                await guarded(
                    self.client.unsubscribe_cov_ex(self.started.device, self.oid, self.process_id),
                    1.0,
                )
        await super().close()


class WhoIsSession(BacpyClientSession, AsyncSession):
    """Who-Is through the BBMD (or to the device); the expected device must answer with I-Am."""

    def __init__(
        self,
        started: StartedClient,
        target: TargetAddress,
        timeout: float,
        params: WhoIsParams,
        destination: str | BACnetAddress | None,
    ) -> None:
        super().__init__(started, target, timeout)
        self.destination = destination
        self.device = params.device if params.device is not None else target.device
        self.low = params.low if params.low is not None else self.device
        self.high = params.high if params.high is not None else self.device
        if self.low is None or self.high is None:
            self.low = self.high = None

    async def call(self) -> int:
        found = await guarded(
            self.client.who_is(
                self.low,
                self.high,
                destination=self.destination,
                timeout=self.timeout,
                expected_count=None if self.device is None else 1,
            ),
            self.timeout + 1.0,
        )
        if not found:
            raise OpError(ErrorClass.TIMEOUT, "no I-Am in reply to Who-Is")
        devices = [iam.object_identifier.instance_number for iam in found]
        if self.device is not None and self.device not in devices:
            raise OpError(
                ErrorClass.VALIDATION, f"I-Am from {devices}, not from device {self.device}"
            )
        return 0


class TableSession(BacpyClientSession, AsyncSession):
    """Read-Foreign-Device-Table or Read-Broadcast-Distribution-Table of a BBMD."""

    def __init__(
        self,
        started: StartedClient,
        target: TargetAddress,
        timeout: float,
        bbmd: str,
        op: str,
        params: TableParams,
    ) -> None:
        super().__init__(started, target, timeout)
        self.bbmd = bbmd
        self.op = op
        self.min_entries = params.min_entries

    async def call(self) -> int:
        read = self.client.read_fdt if self.op == "read-fdt" else self.client.read_bdt
        entries: list[Any] = await guarded(
            read(self.bbmd, timeout=self.timeout), self.timeout + 1.0
        )
        if len(entries) < self.min_entries:
            raise OpError(
                ErrorClass.VALIDATION,
                f"{self.op}: {len(entries)} entries, expected at least {self.min_entries}",
            )
        return 0


class RouteCheckSession(BacpyClientSession, AsyncSession):
    """Who-Is-Router-To-Network; a router must announce the network."""

    def __init__(
        self, started: StartedClient, target: TargetAddress, timeout: float, network: int
    ) -> None:
        super().__init__(started, target, timeout)
        self.network = network

    async def call(self) -> int:
        routers = await guarded(
            self.client.who_is_router_to_network(
                network=self.network, timeout=self.timeout, expected_count=1
            ),
            self.timeout + 1.0,
        )
        if not routers:
            raise OpError(
                ErrorClass.TIMEOUT, f"no I-Am-Router-To-Network for network {self.network}"
            )
        if not any(self.network in router.networks for router in routers):
            raise OpError(
                ErrorClass.VALIDATION,
                f"routers announce {[r.networks for r in routers]}, not {self.network}",
            )
        return 0


async def _cov_object(
    target: TargetAddress, options: BacnetIpOptions, params: CovParams, index: int, limit: float
) -> ObjectIdentifier:
    """The object session ``index`` subscribes to (wildcards read the object-list first)."""
    selectors = [parse_selector(s) for s in params.objects]
    inventory: list[ObjectIdentifier] = []
    if any(s.wildcard for s in selectors):
        lean = await open_client(target, options, limit)
        try:
            found = await read_inventory(lean, target, None, options, limit)
        finally:
            lean.close()
        inventory = found.objects
    chosen = expand_all(selectors, inventory)
    if not chosen:
        raise OpError(ErrorClass.LOCAL, f"no object of the device matches {params.objects}")
    return chosen[index % len(chosen)]


async def open_control_session(
    ctx: SessionContext, target: TargetAddress, options: BacnetIpOptions
) -> Session:
    """Open a control-path session for ``ctx.op``."""
    params = ctx.params
    if ctx.op == "cov":
        assert isinstance(params, CovParams)
        register = bbmd_of(target, options, "foreign_device") if options.foreign_device else None
        client = await open_bacpy_client(ctx, target, options, register)
        try:
            oid = await _cov_object(target, options, params, ctx.index, ctx.timeout)
        except BaseException:
            await BacpyClientSession(client, target, ctx.timeout).close()
            raise
        return CovSession(client, target, ctx.timeout, oid, params, PROCESS_ID_BASE + ctx.index)
    if ctx.op == "who-is":
        assert isinstance(params, WhoIsParams)
        bbmd = options.bbmd or target.bbmd
        client = await open_bacpy_client(ctx, target, options, bbmd)
        destination = None if bbmd is not None else client.device
        return WhoIsSession(client, target, ctx.timeout, params, destination)
    if ctx.op in ("read-fdt", "read-bdt"):
        assert isinstance(params, TableParams)
        if target.ipv6:
            raise OpError(
                ErrorClass.LOCAL,
                f"{ctx.op}: BACnet/IPv6 (Annex U) has no Read-Broadcast-Distribution-Table "
                "nor Read-Foreign-Device-Table",
            )
        bbmd = bbmd_of(target, options, ctx.op)
        client = await open_bacpy_client(ctx, target, options, None)
        return TableSession(client, target, ctx.timeout, bbmd, ctx.op, params)
    assert isinstance(params, RouteCheckParams)
    network = params.network if params.network is not None else target.dnet
    if network is None:
        raise OpError(
            ErrorClass.LOCAL, "route-check needs a network: dnet in the target URL or network"
        )
    client = await open_bacpy_client(ctx, target, options, bbmd_of(target, options, "route-check"))
    return RouteCheckSession(client, target, ctx.timeout, network)
