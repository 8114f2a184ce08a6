"""The ``bacnet://`` target URL: where a BACnet device is and how to reach it.

``bacnet://HOST[:PORT]/[?device=N][&dnet=NET&dadr=HEXMAC][&bbmd=1|HOST:PORT]``

* ``HOST`` is an IPv4 address (or ``localhost``): BACnet/IP (Annex J); or an
  IPv6 address in brackets, ``[::1]``: BACnet/IPv6 (Annex U). ``PORT``
  defaults to 47808.
* ``device`` is the device instance (default: the wildcard instance 4194303,
  which a device answers as "this device").
* ``dnet`` and ``dadr`` address a device behind a router: HOST:PORT is then the
  router and the device is ``dnet:dadr``, ``dadr`` being the device's MAC on
  that network in hex, whatever its data link: 6 bytes on BACnet/IP (its IPv4
  address and port, e.g. ``7f000001bac1``), the 3-byte VMAC on BACnet/IPv6
  (``aabbcc``), the 6-byte VMAC on BACnet/SC (``02cc00000001``).
* ``bbmd=1`` says HOST:PORT is also a BBMD (clients may register there as
  foreign devices); ``bbmd=HOST:PORT`` names another one (``bbmd=[::1]:PORT``).

The embedded targets announce URLs of this form.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from protobench.protocols.bacnet_ip.objects import MAX_INSTANCE

DEFAULT_PORT = 47808
SCHEME = "bacnet"
_KEYS = frozenset({"device", "dnet", "dadr", "bbmd"})


@dataclass(frozen=True)
class TargetAddress:
    """A parsed target URL."""

    host: str
    port: int
    device: int | None = None
    dnet: int | None = None
    dadr: bytes | None = None
    bbmd: str | None = None

    @property
    def ipv6(self) -> bool:
        """Whether the first hop is on BACnet/IPv6."""
        return ":" in self.host

    @property
    def endpoint(self) -> str:
        """``HOST:PORT`` (``[HOST]:PORT`` on IPv6) of the first hop (the device, or its router)."""
        return join_endpoint(self.host, self.port)

    @property
    def routed(self) -> bool:
        return self.dnet is not None

    @property
    def device_address(self) -> str:
        """The device's address in bac-py's notation: ``HOST:PORT`` or ``NET:HEXMAC``."""
        if self.dnet is not None and self.dadr is not None:
            return f"{self.dnet}:{self.dadr.hex()}"
        return self.endpoint

    @property
    def device_instance(self) -> int:
        """The device instance, or the wildcard instance when the URL gives none."""
        return MAX_INSTANCE if self.device is None else self.device

    def url(self) -> str:
        """The canonical URL of this address."""
        query = []
        if self.dnet is not None and self.dadr is not None:
            query += [f"dnet={self.dnet}", f"dadr={self.dadr.hex()}"]
        if self.device is not None:
            query.append(f"device={self.device}")
        if self.bbmd is not None:
            query.append("bbmd=1" if self.bbmd == self.endpoint else f"bbmd={self.bbmd}")
        return f"{SCHEME}://{self.endpoint}/" + ("?" + "&".join(query) if query else "")


def parse_target(url: str) -> TargetAddress:
    """Parse a ``bacnet://`` URL; ``ValueError`` says what is wrong."""
    parts = urlsplit(url)
    if parts.scheme != SCHEME:
        raise ValueError(
            f"expected a URL such as bacnet://127.0.0.1:47808/?device=400, got {url!r}"
        )
    host = _ip(parts.hostname or "")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = set(query) - _KEYS
    if unknown:
        raise ValueError(f"unknown URL parameter(s) {sorted(unknown)} (known: {sorted(_KEYS)})")
    device = _int(query, "device", 0, MAX_INSTANCE)
    dnet = _int(query, "dnet", 1, 65534)
    dadr = bytes.fromhex(query["dadr"]) if "dadr" in query else None
    if (dnet is None) != (dadr is None) or (dadr is not None and not 1 <= len(dadr) <= 7):
        raise ValueError("a routed target needs both dnet and dadr (1 to 7 bytes in hex)")
    bbmd = query.get("bbmd")
    if bbmd is not None:
        bbmd = join_endpoint(host, port) if bbmd in ("1", "true", "") else parse_endpoint(bbmd)
    return TargetAddress(host, port, device, dnet, dadr, bbmd)


def _ip(host: str) -> str:
    if host == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        raise ValueError(
            f"expected an IPv4 address or an IPv6 address in brackets as host, got {host!r}"
        ) from None


def join_endpoint(host: str, port: int) -> str:
    """``HOST:PORT``, or ``[HOST]:PORT`` for an IPv6 host (bac-py's notation too)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_endpoint(text: str) -> str:
    """``HOST:PORT`` with HOST an IPv4 address (or ``localhost``) or ``[IPv6]``;
    ``ValueError`` otherwise."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"expected [IPv6]:PORT, with brackets, got {text!r}")
    return join_endpoint(_ip(host), int(port))


def _int(query: dict[str, str], key: str, low: int, high: int) -> int | None:
    if key not in query:
        return None
    try:
        value = int(query[key])
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {query[key]!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{key} must be between {low} and {high}, got {value}")
    return value
