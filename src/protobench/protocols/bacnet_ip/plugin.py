"""The BACnet/IP protocol plugin: devices, routers and BBMDs over UDP, with bac-py.

Targets are ``bacnet://HOST:PORT/?device=N[&dnet=NET&dadr=HEXMAC][&bbmd=1]``
URLs (:mod:`.address`). Operations (:mod:`.options` lists their parameters):

* hot path, on the lean client (:mod:`.sessions`, :mod:`.client`,
  :mod:`.codec`): ``read-property``, ``write-property``,
  ``read-property-multiple``, ``write-property-multiple``, ``object-list``;
* control path, on bac-py's ``Client`` (:mod:`.control`): ``cov`` (a stream:
  the subscribe latency is the op's latency, notifications are the
  ``notifications`` counter), ``who-is``, ``read-fdt``, ``read-bdt``,
  ``route-check``.

Sessions with wildcard selectors first read the device's object-list
(:mod:`.inventory`: segmented, as an array, or after a Who-Is). Replies
in segments are reassembled by the lean client (:mod:`.segments`).
``protobench discover bacnet://...`` asks a device what it has (:meth:`discover`:
:mod:`.discover`) and fits a profile to it (:mod:`.fit`).

Failures are mapped in :mod:`.errors`: BACnet Error/Reject/Abort are
``protocol`` errors with their class:code, a wrong reply is ``validation``.
"""

from __future__ import annotations

from typing import ClassVar

from protobench.protocols.bacnet_ip.address import parse_target
from protobench.protocols.bacnet_ip.control import open_control_session
from protobench.protocols.bacnet_ip.discover import discover as read_device
from protobench.protocols.bacnet_ip.fit import fitted_profile, summary
from protobench.protocols.bacnet_ip.options import OPERATIONS, BacnetIpOptions
from protobench.protocols.bacnet_ip.sessions import BUILDERS, open_lean_session
from protobench.protocols.base import (
    DiscoverRequest,
    Discovery,
    ProtocolPlugin,
    Session,
    SessionContext,
    StrictModel,
)
from protobench.vocab.errors import ErrorClass, OpError


class BacnetIpProtocol(ProtocolPlugin):
    """BACnet/IP (Annex J) with routing and BBMD foreign-device support."""

    name = "bacnet-ip"
    description = "BACnet/IP devices, routers and BBMDs: property services, COV, discovery"
    options: ClassVar[type[StrictModel]] = BacnetIpOptions
    operations = OPERATIONS
    embedded_target = "bacnet-ip"
    url_schemes = ("bacnet",)
    discover_by_scheme = True
    connection_oriented = False  # UDP: the target's memory is never per connection

    def check_target(self, url: str) -> None:
        parse_target(url)

    async def open_session(self, ctx: SessionContext) -> Session:
        try:
            target = parse_target(ctx.target)
        except ValueError as exc:
            raise OpError(ErrorClass.LOCAL, f"bad target: {exc}") from None
        options = ctx.options
        assert isinstance(options, BacnetIpOptions)
        if ctx.op in BUILDERS:
            return await open_lean_session(ctx, target, options)
        return await open_control_session(ctx, target, options)

    async def discover(self, request: DiscoverRequest) -> Discovery:
        options = request.options
        assert isinstance(options, BacnetIpOptions)
        info = await read_device(request.url, options, request.timeout)
        return Discovery(summary(info), fitted_profile(info, request.profile_name))


__all__ = ["BacnetIpProtocol"]
