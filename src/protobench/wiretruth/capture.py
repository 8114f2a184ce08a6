"""A capture of loopback with ``tcpdump``, for the length of a ``with`` block.

:func:`capture` starts ``tcpdump`` on the loopback interface with a filter on
the server's port (nanosecond timestamps, headers and the start of each
payload), waits until it listens, and stops it when the block ends: after
:data:`FLUSH_WAIT` (libpcap hands packets over in blocks, at least once a
second, and a block not yet handed over is lost when it stops) with SIGINT, so
that it writes the file and says how many packets the kernel dropped
(:attr:`Capture.dropped`). It runs in its own session and never outlives the
block. :func:`unavailable` says why no capture can be made here (no
``tcpdump``, or no permission), or ``None``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from protobench.vocab.exceptions import Incomplete

FLUSH_WAIT = 1.2
"""Seconds the capture goes on after the block, so the last packets reach the file."""
START_TIMEOUT = 10.0
SNAPLEN = 200
"""Bytes captured of each packet by default: the headers and the start of the payload."""
BUFFER_KIB = 65536
_PATHS = ("/usr/bin/tcpdump", "/usr/sbin/tcpdump")


class CaptureError(Incomplete, RuntimeError):
    """The capture could not start or did not end well: one line saying why."""


@dataclass
class Capture:
    """A capture's file and, once it ended, how many packets the kernel dropped."""

    path: Path
    dropped: int = 0


def tcpdump() -> str | None:
    """The path of ``tcpdump``, or ``None``."""
    return shutil.which("tcpdump") or next((p for p in _PATHS if Path(p).exists()), None)


def unavailable(directory: Path) -> str | None:
    """Why no capture of loopback can be made here (one line), or ``None`` when one can."""
    if tcpdump() is None:
        return "tcpdump is not installed (scripts/setup installs it)"
    try:
        with capture(1, directory, flush_wait=0.0):
            pass
    except CaptureError as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def capture(
    port: int,
    directory: Path,
    *,
    transport: str = "tcp",
    interface: str = "lo",
    flush_wait: float = FLUSH_WAIT,
    snaplen: int = SNAPLEN,
) -> Iterator[Capture]:
    """Capture ``transport`` packets to or from ``port`` on ``interface`` into ``directory``,
    the first ``snaplen`` bytes of each (a pairer that finds several messages in one packet
    needs them all: 65535 takes whole packets)."""
    program = tcpdump()
    if program is None:
        raise CaptureError("tcpdump is not installed (scripts/setup installs it)")
    path = directory / f"wire-{port}.pcap"
    log = directory / f"wire-{port}.log"
    command = [
        program, "-i", interface, "-n", "-w", str(path), "-s", str(snaplen),
        "-B", str(BUFFER_KIB), "--time-stamp-precision=nano", f"{transport} port {port}",
    ]  # fmt: skip
    with log.open("wb") as errors:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True
        )
    try:
        _wait_listening(process, log)
        result = Capture(path)
        yield result
        time.sleep(flush_wait)
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise CaptureError("tcpdump did not stop within 10 s of SIGINT") from None
        found = re.search(r"(\d+) packets? dropped by kernel", log.read_text(errors="replace"))
        result.dropped = int(found.group(1)) if found else 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _wait_listening(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "listening on" in text:
            return
        if process.poll() is not None:
            last = text.strip().splitlines()[-1] if text.strip() else f"exit {process.returncode}"
            raise CaptureError(f"tcpdump could not capture: {last}")
        time.sleep(0.02)
    raise CaptureError("tcpdump did not start listening within 10 s")
