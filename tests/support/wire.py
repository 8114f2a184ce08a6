"""A test helper: the wire's latencies of a block's HTTP exchanges, from a capture of loopback.

:func:`captured` captures the packets to and from a URL's port for the length of
a ``with`` block (``tcpdump``: :mod:`protobench.wiretruth.capture`) and skips
the test, with the reason, where no capture can be made (no tcpdump, no
permission). :func:`wire_latency` pairs the capture's requests and replies per
connection and gives their latency percentiles through the same HdrHistogram as
protobench's report.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from protobench.engine.metrics import fold, new_histogram, summary
from protobench.wiretruth import pairing, pcap
from protobench.wiretruth.capture import Capture, capture, unavailable


def port_of(url: str) -> int:
    return int(url.split("//")[1].split("/", maxsplit=1)[0].rsplit(":", 1)[1])


@contextmanager
def captured(url: str, directory: Path) -> Iterator[Capture]:
    """Capture the packets of ``url``'s port while the block runs (skip where none can be)."""
    reason = unavailable(directory)
    if reason is not None:
        pytest.skip(f"cannot capture loopback: {reason}")
    with capture(port_of(url), directory) as wire:
        yield wire


def wire_latency(wire: Capture, url: str) -> dict[str, float]:
    """Count and percentiles (µs) of the captured HTTP exchanges' latencies on the wire."""
    latencies = array("q", (e.latency_ns for e in pairing.http(pcap.read(wire.path), port_of(url))))
    hist = new_histogram()
    fold(hist, latencies)
    return summary(hist)
