"""A test helper: the wire's latencies of a block's exchanges, from a capture of loopback.

:func:`captured` captures the packets to and from a URL's port for the length of
a ``with`` block (``tcpdump``: :mod:`protobench.wiretruth.capture`) and skips
the test, with the reason, where no capture can be made (no tcpdump, no
permission). :func:`wire_latency` pairs the capture's requests and replies (by
the protocol's pairer: per connection for HTTP, by invoke ID for BACnet/IP...)
and gives their latency percentiles through the same HdrHistogram as
protobench's report; :func:`reported_latency` gives a run's over the same exchanges.
"""

from __future__ import annotations

import gzip
import json
import time
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from protobench.engine.metrics import fold, merge, new_histogram, summary
from protobench.wiretruth import pairing, pcap
from protobench.wiretruth.capture import SNAPLEN, Capture, capture, unavailable


def port_of(url: str) -> int:
    return int(url.split("//")[1].split("/", maxsplit=1)[0].rsplit(":", 1)[1])


@contextmanager
def captured(
    url: str, directory: Path, transport: str = "tcp", snaplen: int = SNAPLEN
) -> Iterator[Capture]:
    """Capture the ``transport`` packets of ``url``'s port (their first ``snaplen`` bytes)
    while the block runs (skip where none can be)."""
    reason = unavailable(directory)
    if reason is not None:
        pytest.skip(f"cannot capture loopback: {reason}")
    with capture(port_of(url), directory, transport=transport, snaplen=snaplen) as wire:
        yield wire


def reported_latency(report: dict[str, Any], op: str | None = None) -> dict[str, float]:
    """Count and percentiles (µs) of every exchange the run timed (of ``op``, else of every
    op), in every phase: its snapshot's histograms merged (a run without warmup times the
    capture's exchanges: those its sustain phase ended and the few its drain did)."""
    with gzip.open(report["snapshot"], "rb") as raw:
        snapshot = json.loads(raw.read())
    encoded = [
        hists["hist"]
        for phase in snapshot["histograms"].values()
        for name, hists in phase.items()
        if op is None or name == op
    ]
    return summary(merge(encoded))


def _wall_offset_ns() -> int:
    """``CLOCK_REALTIME`` (the capture's) minus ``CLOCK_MONOTONIC`` (payload stamps'): the
    pair of reads closest together of a few."""
    best = None
    for _ in range(20):
        before = time.monotonic_ns()
        wall = time.clock_gettime_ns(time.CLOCK_REALTIME)
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, wall - (before + after) // 2)
    assert best is not None
    return best[1]


def delivered_latency(wire: Capture, url: str) -> dict[str, float]:
    """Count and percentiles (µs) of the captured MQTT deliveries to subscribers, each from
    the send time in its payload to its packet on the wire
    (:func:`protobench.wiretruth.pairing.mqtt_delivered`)."""
    exchanges = pairing.mqtt_delivered(pcap.read(wire.path), port_of(url), _wall_offset_ns())
    hist = new_histogram()
    fold(hist, array("q", (e.latency_ns for e in exchanges)))
    return summary(hist)


def wire_latency(wire: Capture, url: str, protocol: str = "http") -> dict[str, float]:
    """Count and percentiles (µs) of the captured exchanges' latencies on the wire, paired by
    ``protocol``'s pairer (:data:`protobench.wiretruth.pairing.PAIRERS`)."""
    pairer = pairing.PAIRERS[protocol]
    latencies = array("q", (e.latency_ns for e in pairer(pcap.read(wire.path), port_of(url))))
    hist = new_histogram()
    fold(hist, latencies)
    return summary(hist)
