"""``protobench serve bacnet-sc``: a BACnet/SC hub with echo nodes (bac-py).

The hub is bac-py's ``SCHubFunction`` bound to the loopback address; ``nodes``
echo nodes (``SCTransport`` with VMACs ``02:bb:00:00:00:01``, ``...:02``...)
connect to it and answer every NPDU they receive, unicast or broadcast, with
``prefix + NPDU`` sent back to its originator.

With ``tls = true`` (the default) a mock CA and EC P-256 certificates for the
hub, each node and one client are generated at start in a temporary
directory; every connection is mutual TLS 1.3 (bac-py's contexts). The
announced URL is ``wss://127.0.0.1:PORT`` with the CA, the client certificate
and its key named in the URL fragment (see :mod:`protobench.tlsutil`), which
the ``bacnet-sc`` protocol reads when its options leave them unset.
``--no-tls`` serves plain ``ws://`` (``SCTLSConfig(allow_plaintext=True)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import tempfile
from collections.abc import Callable
from importlib.metadata import version
from typing import ClassVar

from bac_py.transport.sc import SCTransport, SCTransportConfig
from bac_py.transport.sc.hub_function import SCHubConfig, SCHubFunction
from bac_py.transport.sc.tls import SCTLSConfig
from bac_py.transport.sc.vmac import SCVMAC, DeviceUUID
from pydantic import Field

from protobench.hostutil import free_port
from protobench.protocols.base import StrictModel
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.tlsutil import CertPair, MockPki, generate, url_with_files

NODE_VMAC_PREFIX = bytes.fromhex("02bb000000")
_BIND_TRIES = 5


def node_vmac(number: int) -> bytes:
    """VMAC of echo node ``number`` (1-based): ``02:bb:00:00:00:NN``."""
    return NODE_VMAC_PREFIX + bytes([number])


class BacnetScTargetOptions(StrictModel):
    """Options of the embedded SC hub (``protobench serve bacnet-sc --help``)."""

    tls: bool = Field(
        default=True, description="wss:// with mutual TLS 1.3 and generated certificates"
    )
    nodes: int = Field(default=2, ge=1, le=200, description="echo nodes on the hub")
    prefix: str = Field(default="ECHO:", description="what the nodes put before each echo")


def sc_tls(pki: MockPki | None, pair: CertPair | None) -> SCTLSConfig:
    """bac-py's TLS settings of one SC party: its certificate pair and the mock CA, or plain."""
    if pki is None or pair is None:
        return SCTLSConfig(allow_plaintext=True)
    return SCTLSConfig(
        private_key_path=str(pair.key),
        certificate_path=str(pair.cert),
        ca_certificates_path=str(pki.ca.cert),
    )


async def start_hub(host: str, port: int, tls: SCTLSConfig) -> tuple[SCHubFunction, int]:
    """Start the hub on ``port`` (0: a free port, retried if taken meanwhile)."""
    for attempt in range(_BIND_TRIES):
        chosen = port or free_port(host)
        hub = SCHubFunction(
            SCVMAC.random(),
            DeviceUUID.generate(),
            config=SCHubConfig(bind_address=host, bind_port=chosen, tls_config=tls),
        )
        try:
            await hub.start()
        except OSError as exc:
            if port or exc.errno != errno.EADDRINUSE or attempt == _BIND_TRIES - 1:
                raise
            continue
        return hub, chosen
    raise AssertionError("unreachable")


class BacnetScTarget(EmbeddedTarget):
    """A BACnet/SC hub and echo nodes in one process."""

    name: ClassVar[str] = "bacnet-sc"
    description: ClassVar[str] = (
        "BACnet/SC hub (bac-py) with echo nodes; mutual TLS 1.3 or --no-tls"
    )
    options: ClassVar[type[StrictModel]] = BacnetScTargetOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, BacnetScTargetOptions)
        prefix = options.prefix.encode()
        with contextlib.ExitStack() as stack:
            pki = None
            if options.tls:
                workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="protobench-sc-"))
                names = ["hub", "client"] + [f"node{i}" for i in range(1, options.nodes + 1)]
                pki = generate(workdir, names)
            leaves = pki.leaves if pki else {}
            hub, bound = await start_hub(host, port, sc_tls(pki, leaves.get("hub")))
            scheme = "wss" if pki else "ws"
            uri = f"{scheme}://{host}:{bound}"
            nodes: list[SCTransport] = []
            try:
                for number in range(1, options.nodes + 1):
                    node = SCTransport(
                        SCTransportConfig(
                            primary_hub_uri=uri,
                            tls_config=sc_tls(pki, leaves.get(f"node{number}")),
                            vmac=SCVMAC(node_vmac(number)),
                            min_reconnect_time=0.5,
                            max_reconnect_time=5.0,
                        )
                    )
                    node.on_receive(_echo(node, prefix))
                    nodes.append(node)
                    await node.start()
                    if not await node.hub_connector.wait_connected(10.0):
                        raise RuntimeError(f"echo node {number} could not connect to the hub")
                files = {}
                if pki is not None:
                    files = {
                        "ca_file": str(pki.ca.cert),
                        "cert_file": str(leaves["client"].cert),
                        "key_file": str(leaves["client"].key),
                    }
                kind = f"bac-py {version('bac-py')} SC hub + {options.nodes} echo nodes"
                ready(Announcement(url_with_files(uri, files), kind))
                await asyncio.Future()
            finally:
                for node in nodes:
                    await node.stop()
                await hub.stop()


def _echo(node: SCTransport, prefix: bytes) -> Callable[[bytes, bytes], None]:
    """The receive callback of an echo node: send ``prefix + npdu`` back to its source."""

    def on_receive(npdu: bytes, source: bytes) -> None:
        node.send_unicast(prefix + npdu, source)

    return on_receive
