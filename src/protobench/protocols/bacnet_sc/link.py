"""One stress node's connection to the SC hub, and the error mapping.

:func:`open_link` first probes the hub with one TCP (and TLS, same context)
connection, because bac-py's hub connector retries in the background and keeps
the reason of a failure to itself; then it starts an
``SCTransport`` with a random VMAC and waits for the BVLC-SC connection.

``refused``  nothing listens on the hub's port
``connect``  TLS failure (the reason, e.g. the certificate check), missing
             TLS files, a handshake refused, no hub connection within the timeout
``closed``   the hub connection dropped (bac-py would drop sends silently, so
             sessions check :attr:`Link.connected` and are told of a drop)
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from bac_py.transport.sc import SCTransport, SCTransportConfig
from bac_py.transport.sc.tls import SCTLSConfig, build_client_ssl_context
from bac_py.transport.sc.vmac import SCVMAC

from protobench.protocols.bacnet_sc.options import BacnetScOptions
from protobench.protocols.base import ErrorClass, OpError
from protobench.tlsutil import split_url_files

OnNpdu = Callable[[bytes, bytes], None]


@dataclass
class Link:
    """A started ``SCTransport``; the session sets ``on_drop`` and calls :meth:`receive`."""

    transport: SCTransport
    url: str
    on_drop: Callable[[OpError], None] | None = None
    dropped: OpError | None = field(default=None)

    @property
    def connected(self) -> bool:
        return self.dropped is None and self.transport.hub_connector.is_connected

    def receive(self, callback: OnNpdu) -> None:
        """Hand every received NPDU ``(npdu, source VMAC)`` to ``callback``."""
        self.transport.on_receive(callback)

    def on_status(self, status: object) -> None:
        """bac-py's status callback: a lost hub connection drops the link for good."""
        if not self.transport.hub_connector.is_connected and self.dropped is None:
            self.dropped = OpError(ErrorClass.CLOSED, f"lost the hub connection to {self.url}")
            if self.on_drop is not None:
                self.on_drop(self.dropped)

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


async def _probe(url: str, context: ssl.SSLContext | None, within: float) -> None:
    """Open TCP (and TLS) to the hub once, to name why a connection would fail."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    try:
        async with asyncio.timeout(within):
            _, writer = await asyncio.open_connection(host, port, ssl=context)
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
    except TimeoutError:
        raise OpError(ErrorClass.CONNECT, f"no connection to the hub within {within:g}s") from None
    except OSError as exc:
        raise OpError(ErrorClass.CONNECT, f"cannot reach the hub at {url}: {exc}") from None
    writer.close()


async def open_link(target: str, options: BacnetScOptions, within: float) -> Link:
    """Connect one stress node (random VMAC) to the hub at ``target``."""
    tls = tls_config(target, options)
    url = split_url_files(target)[0]
    try:
        context = build_client_ssl_context(tls)
    except (OSError, ssl.SSLError) as exc:
        raise OpError(ErrorClass.CONNECT, f"cannot load the TLS files: {exc}") from None
    await _probe(url, context, within)
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
    link = Link(transport, url)
    await transport.start()
    if not await transport.hub_connector.wait_connected(within):
        await transport.stop()
        raise OpError(ErrorClass.CONNECT, f"no BACnet/SC connection to the hub within {within:g}s")
    transport.hub_connector.on_status_change = link.on_status
    return link
