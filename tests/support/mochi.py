"""mochi-mqtt, an independent MQTT 5 broker (Go), for the interop tests.

:func:`mochi` builds ``peers/mochi`` (our small main over the mochi-mqtt
module, fetched by ``go`` from the module proxy) into ``.venv-peers/`` on
first use, and runs it on free 127.0.0.1 ports: TCP, WebSocket, and with a
mock PKI TLS and WebSocket over TLS requiring a client certificate. The test
skips, saying why, when Go is missing or the build fails. Its counts (PUBLISH
received and sent, wills, MQTT 5 properties read) are the broker's own truth.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from protobench.hostutil import free_port
from protobench.tlsutil import MockPki
from tests.support.processes import peer_process
from tests.support.timing import S

MOCHI_VERSION = "2.7.9"
SOURCE = Path(__file__).parent / "peers" / "mochi"
BINARY = Path(__file__).resolve().parents[2] / ".venv-peers" / f"mochi-{MOCHI_VERSION}" / "mochi"
GO_PATHS = (Path("/usr/local/go/bin/go"), Path.home() / "go" / "bin" / "go")
"""Where Go is when it is not on PATH (the official tarball's place)."""


def mochi_binary() -> Path:
    """The peer broker's binary, built on first use (again when its source is newer)."""
    newest = max(path.stat().st_mtime for path in SOURCE.iterdir())
    if BINARY.is_file() and BINARY.stat().st_mtime >= newest:
        return BINARY
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None
    )
    if go is None:
        pytest.skip("Go is not installed: the mochi-mqtt peer broker cannot be built")
    BINARY.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [go, "build", "-buildvcs=false", "-o", str(BINARY), "."],
            cwd=SOURCE,
            check=True,
            capture_output=True,
            timeout=600,
            env={**os.environ, "CGO_ENABLED": "0"},
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"the mochi-mqtt peer could not be built: {exc} {detail[-500:]!r}")
    return BINARY


@dataclass
class Mochi:
    """A running mochi-mqtt: its ports by listener and its counts file."""

    ports: dict[str, int]
    proc: subprocess.Popen[bytes]
    counts_file: Path

    def url(self, listener: str = "tcp", path: str = "/mqtt") -> str:
        scheme = {"tcp": "mqtt", "tls": "mqtts", "ws": "ws", "wss": "wss"}[listener]
        tail = path if listener in ("ws", "wss") else ""
        return f"{scheme}://127.0.0.1:{self.ports[listener]}{tail}"

    def counts(self) -> dict[str, Any]:
        """The broker's own counts (see the module docstring)."""
        self.counts_file.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10 * S
        while not self.counts_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.02)
        counts: dict[str, Any] = json.loads(self.counts_file.read_text())
        return counts


@contextmanager
def mochi(directory: Path, pki: MockPki | None = None, alias_max: int = 65535) -> Iterator[Mochi]:
    """mochi-mqtt on 127.0.0.1: ``tcp`` and ``ws`` listeners, and ``tls`` and ``wss`` ones
    requiring a client certificate of ``pki``'s CA when ``pki`` is given."""
    binary = mochi_binary()
    directory.mkdir(parents=True, exist_ok=True)
    listeners = ["tcp", "ws", *(["tls", "wss"] if pki is not None else [])]
    ports = {name: free_port() for name in listeners}
    args = [str(binary), "-counts", str(directory / "mochi-counts.json")]
    args += ["-alias-max", str(alias_max)]
    for name, port in ports.items():
        args += [f"-{name}", f"127.0.0.1:{port}"]
    if pki is not None:
        server = pki.leaves["server"]
        args += ["-cert", str(server.cert), "-key", str(server.key), "-ca", str(pki.ca.cert)]
    with peer_process("mochi", args, directory / "mochi.log", ports.values(), 20 * S) as proc:
        yield Mochi(ports, proc, directory / "mochi-counts.json")
