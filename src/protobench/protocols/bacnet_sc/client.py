"""One stress node's connection to the SC hub, and the error mapping.

:func:`open_link` first probes the hub with one TCP (and TLS, same context)
connection, because bac-py's hub connector retries in the background and keeps
the reason of a failure to itself: after the handshake it sends a plain HTTP
request and reads once, since in TLS 1.3 the client's side of the handshake
ends before the hub has checked the client certificate, and a rejection
arrives only as an alert or a reset on the first read (any answer means the
certificate was accepted). Then it starts an ``SCTransport`` with a random
VMAC and waits for the BVLC-SC connection.

A link carries the exchanges of one or more sessions (``inflight``, shared
through :class:`~protobench.protocols.sharing.ConnectionShare`): an NPDU that
starts with the prefix goes to the session whose source id its tag carries
(the message id is ``(source, seq)``), or to the only session of the link.

``refused``  nothing listens on the hub's port
``connect``  TLS failure (the reason, e.g. the certificate check or the hub's
             alert rejecting our certificate), missing TLS files, a handshake
             refused, no hub connection within the timeout
``closed``   the hub connection dropped (bac-py would drop sends silently, so
             sessions check :attr:`Link.connected` and are told of a drop)
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from bac_py.transport.sc import SCTransport, SCTransportConfig
from bac_py.transport.sc.tls import SCTLSConfig, build_client_ssl_context
from bac_py.transport.sc.vmac import SCVMAC

from protobench.protocols.bacnet_sc.options import BacnetScOptions
from protobench.protocols.payloads import BINARY_TAG
from protobench.tlsutil import split_url_files
from protobench.vocab.errors import ErrorClass, OpError


class Member(Protocol):
    """A session on a link: told of every NPDU carrying its source id, and of a drop."""

    def on_npdu(self, npdu: bytes, source: bytes) -> None: ...

    def on_drop(self, error: OpError) -> None: ...


_BUDGET = 0.9
"""Share of the open timeout the link's steps may use."""


@dataclass
class Link:
    """A started ``SCTransport``; sessions :meth:`attach` under their payloads' source id."""

    transport: SCTransport
    url: str
    prefix: bytes
    members: dict[int, Member] = field(default_factory=dict)
    dropped: OpError | None = field(default=None)

    def __post_init__(self) -> None:
        self.transport.on_receive(self._on_npdu)

    @property
    def connected(self) -> bool:
        return self.dropped is None and self.transport.hub_connector.is_connected

    @property
    def alive(self) -> bool:
        """Not dropped: more sessions may join it."""
        return self.dropped is None

    def attach(self, source: int, member: Member) -> None:
        self.members[source] = member

    def detach(self, source: int) -> None:
        self.members.pop(source, None)

    def _on_npdu(self, npdu: bytes, source: bytes) -> None:
        prefix = self.prefix
        if not npdu.startswith(prefix):
            return
        members = self.members
        member = None
        if len(npdu) >= len(prefix) + BINARY_TAG.size:
            member = members.get(BINARY_TAG.unpack_from(npdu, len(prefix))[0])
        if member is None and len(members) == 1:
            member = next(iter(members.values()))  # a damaged tag: its only exchange fails
        if member is not None:
            member.on_npdu(npdu, source)

    def on_status(self, status: object) -> None:
        """bac-py's status callback: a lost hub connection drops the link for good."""
        if not self.transport.hub_connector.is_connected and self.dropped is None:
            self.dropped = OpError(ErrorClass.CLOSED, f"lost the hub connection to {self.url}")
            for member in list(self.members.values()):
                member.on_drop(self.dropped)

    async def close(self) -> None:
        self.dropped = self.dropped or OpError(ErrorClass.CLOSED, "closed by the client")
        await self.transport.stop()


def tls_config(url: str, options: BacnetScOptions) -> SCTLSConfig:
    """The TLS config for ``url``: mutual TLS for wss://, plaintext for ws://."""
    base, files = split_url_files(url)
    scheme = urlsplit(base).scheme
    if scheme == "ws":
        return SCTLSConfig(allow_plaintext=True)
    if scheme != "wss":
        raise OpError(ErrorClass.CONNECT, f"expected a wss:// (or ws://) hub URL, got {base!r}")
    cert = options.cert_file or files.get("cert_file")
    key = options.key_file or files.get("key_file")
    ca = options.ca_file or files.get("ca_file")
    if not (cert and key and ca):
        raise OpError(
            ErrorClass.CONNECT,
            "BACnet/SC over wss:// is mutual TLS: set cert_file, key_file and ca_file",
        )
    return SCTLSConfig(
        private_key_path=key,
        certificate_path=cert,
        ca_certificates_path=ca,
        key_password=options.key_password,
    )


_PROBE_REQUEST = b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
"""Not an upgrade: a hub that accepted our certificate answers it with an HTTP error."""


def _rejected(url: str, what: str) -> str:
    return (
        f"the hub at {url} {what} at the end of the TLS handshake, without a reply:"
        " it rejected our client certificate (cert_file) or this client"
    )


async def _probe(url: str, context: ssl.SSLContext | None, within: float) -> None:
    """Open TCP (and TLS) to the hub once and read its answer to a plain HTTP request,
    to name why a connection would fail."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    writer = None
    try:
        async with asyncio.timeout(within):
            reader, writer = await asyncio.open_connection(host, port, ssl=context)
            if context is not None:
                writer.write(_PROBE_REQUEST % host.encode())
                if not await reader.read(1):
                    raise OpError(ErrorClass.CONNECT, _rejected(url, "closed the connection"))
    except ConnectionRefusedError:
        raise OpError(ErrorClass.REFUSED, f"connection refused by the hub at {url}") from None
    except ssl.SSLCertVerificationError as exc:
        raise OpError(
            ErrorClass.CONNECT, f"TLS certificate verification failed: {exc.verify_message}"
        ) from None
    except ssl.SSLError as exc:
        raise OpError(
            ErrorClass.CONNECT, f"TLS handshake with {host} failed: {exc.reason or exc}"
        ) from None
    except ConnectionResetError:
        raise OpError(
            ErrorClass.CONNECT, _rejected(url, "reset the connection (ECONNRESET)")
        ) from None
    except TimeoutError:
        raise OpError(ErrorClass.CONNECT, f"no connection to the hub within {within:g}s") from None
    except OSError as exc:
        raise OpError(ErrorClass.CONNECT, f"cannot reach the hub at {url}: {exc}") from None
    finally:
        if writer is not None:
            writer.close()


async def open_link(target: str, options: BacnetScOptions, prefix: bytes, within: float) -> Link:
    """Connect one stress node (random VMAC) to the hub at ``target``.

    The steps share 90% of ``within`` (the engine's open timeout), so a failure
    is named here before the engine gives up on the open."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within * _BUDGET
    tls = tls_config(target, options)
    url = split_url_files(target)[0]
    try:
        context = build_client_ssl_context(tls)
    except (OSError, ssl.SSLError) as exc:
        raise OpError(ErrorClass.CONNECT, f"cannot load the TLS files: {exc}") from None
    await _probe(url, context, within * _BUDGET)
    transport = SCTransport(
        SCTransportConfig(
            primary_hub_uri=url,
            tls_config=tls,
            vmac=SCVMAC.random(),
            min_reconnect_time=within,
            max_reconnect_time=within,
            connect_timeout=within,
        )
    )
    link = Link(transport, url, prefix)
    await transport.start()
    if not await transport.hub_connector.wait_connected(max(deadline - loop.time(), 0.0)):
        await transport.stop()
        raise OpError(
            ErrorClass.CONNECT,
            f"no BACnet/SC connection to the hub within {within * _BUDGET:g}s",
        )
    transport.hub_connector.on_status_change = link.on_status
    return link
