"""Source addresses: many client connections to one target beyond one address's ports.

Connections from one source address to one destination (address, port) are
told apart by their source port alone, so one address reaches one broker at
most as many times as the ephemeral port range allows (32768-60999 on Linux:
28,232). The ``source_addresses`` option of the MQTT and WebSocket plugins
spreads connections over more addresses:

* unset (automatic): to an IPv4 loopback target, the sessions of index
  :data:`AUTO_PER_ADDRESS` and beyond go from 127.0.0.2, 127.0.0.3... (a block
  of that many sessions per address); elsewhere nothing changes;
* a count N: the addresses 127.0.0.1 .. 127.0.0.N (then 127.0.1.0...), session
  ``index`` on address ``index % N``;
* a list of IP addresses: the same, over those.

The socket is bound with ``IP_BIND_ADDRESS_NO_PORT`` before ``connect`` so the
kernel picks the source port at connect time, per destination.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from typing import Annotated, Final

from pydantic import BeforeValidator

AUTO_PER_ADDRESS: Final = 20_000
"""Sessions per source address in the automatic mode (below the 28,232 ports)."""
MAX_COUNT: Final = 1 << 20
_LOOPBACK_BASE: Final = int(ipaddress.IPv4Address("127.0.0.1"))
_BIND_ADDRESS_NO_PORT: Final = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


def _parse(value: object) -> object:
    if value is None or isinstance(value, int):
        if isinstance(value, int) and not 1 <= value <= MAX_COUNT:
            raise ValueError(f"expected a count of addresses between 1 and {MAX_COUNT}")
        return value
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list | tuple):
        if not value:
            raise ValueError("expected at least one source address")
        addresses = []
        for item in value:
            try:
                addresses.append(str(ipaddress.ip_address(str(item).strip("[]"))))
            except ValueError:
                raise ValueError(f"not an IP address: {item!r}") from None
        return addresses
    raise ValueError("expected a count of loopback addresses or a list of IP addresses")


SourceAddresses = Annotated[int | list[str] | None, BeforeValidator(_parse)]
"""The option's type: unset (automatic), a count, or a list of addresses."""


def loopback(k: int) -> str:
    """The ``k``-th loopback address from 127.0.0.1 (k = 0)."""
    return str(ipaddress.IPv4Address(_LOOPBACK_BASE + k))


def source_for(spec: int | list[str] | None, index: int, host: str) -> str | None:
    """The address session ``index`` connects from, or None for the kernel's choice."""
    if spec is None:
        try:
            target = ipaddress.ip_address(host)
        except ValueError:
            return None
        block = index // AUTO_PER_ADDRESS
        if block == 0 or target.version != 4 or not target.is_loopback:
            return None
        return loopback(block)
    if isinstance(spec, int):
        return loopback(index % spec)
    return spec[index % len(spec)]


async def connected_socket(host: str, port: int, source: str) -> socket.socket:
    """A non-blocking TCP socket bound to ``source`` and connected to ``host:port``."""
    family = socket.AF_INET6 if ":" in source else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        if family == socket.AF_INET:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_IP, _BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source, 0))
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
    except BaseException:
        sock.close()
        raise
    return sock
