"""A fixture helper: nginx (Debian's nginx-light) as an independent HTTP server on loopback.

:func:`nginx` writes a config into a temporary directory, starts one nginx
process (no daemon, no master) on a free 127.0.0.1 port and stops it
afterwards. Its access log, one ``STATUS REQUEST-LINE`` line per response
nginx wrote, is the truth a run's ok count is checked against. Tests skip when
nginx is not installed (``scripts/setup`` installs it).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.timing import S

NGINX_PATHS = ("/usr/sbin/nginx",)


@dataclass
class Nginx:
    """A running nginx: its base URL and its access log."""

    url: str
    log: Path

    def requests(self) -> list[str]:
        """The access log's lines (``"200 GET /x HTTP/1.1"``), as far as nginx wrote them."""
        return self.log.read_text().splitlines() if self.log.exists() else []


def find_nginx() -> str:
    """nginx's path, or skip the test."""
    found = shutil.which("nginx") or next((p for p in NGINX_PATHS if Path(p).exists()), None)
    if found is None:
        pytest.skip("nginx is not installed (scripts/setup installs nginx-light)")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def nginx(
    root: Path, server: str, http: str = "", listen: str = "", scheme: str = "http"
) -> Iterator[Nginx]:
    """nginx with ``server`` inside its ``server {}`` and ``http`` beside it; yields it.

    ``listen`` follows the port on the ``listen`` line (``http2``, ``ssl http2``);
    ``scheme`` is the URL's. The access log is complete once the context exits
    (nginx is stopped and has flushed it); read it after the ``with`` block for exact
    counts. Its lines are ``STATUS REQUEST-LINE`` (``200 GET / HTTP/2.0`` over HTTP/2).
    """
    binary = find_nginx()
    port = _free_port()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    log = root / "logs" / "access.log"
    conf = root / "nginx.conf"
    temp = " ".join(
        f"{name}_temp_path {root}/{name};" for name in ("client_body", "proxy", "fastcgi")
    )
    conf.write_text(
        f"""worker_processes 1;
daemon off;
master_process off;
pid {root}/nginx.pid;
error_log {root}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
  log_format pb '$status $request';
  access_log {log} pb;
  {temp}
  {http}
  server {{
    listen 127.0.0.1:{port} {listen};
    {server}
  }}
}}
"""
    )
    command = [binary, "-p", str(root), "-c", str(conf), "-e", str(root / "logs" / "error.log")]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _wait_listening(port, process)
        yield Nginx(f"{scheme}://127.0.0.1:{port}", log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10 * S
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if process.poll() is not None:
                error = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"nginx did not start: {error.strip()}") from None
            time.sleep(0.05)
    raise RuntimeError(f"nginx did not listen within {10 * S:.0f} s")
