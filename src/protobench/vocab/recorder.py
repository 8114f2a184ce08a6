"""The recorder interface a protocol plugin writes to (a stream session's ``run(recorder)``).

The engine implements it (``engine.metrics.OpRecorder``, one per operation per
worker); a plugin types against :class:`Recorder` and never imports the
engine. Latencies are nanoseconds; a success is one recorded latency (the ok
count is the number of latencies). Hot loops take their sinks once, when the
session starts running (:meth:`Recorder.latency_sink`, :meth:`Recorder.counter_sink`):
they stay valid for the whole run, so a message costs what an ``append`` costs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Protocol

from protobench.vocab.errors import OpError


class Recorder(Protocol):
    """Where a session records its exchanges, failures, counters and received bytes."""

    def record(self, latency_ns: int) -> None:
        """One success with its latency in nanoseconds."""

    def latency_sink(self) -> Callable[[int], None]:
        """A fast :meth:`record` for a hot loop, valid for the whole run."""

    def error(self, exc: OpError) -> None:
        """One failed operation, counted by its class (and code)."""

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the named counter (``lost``, ``received``, ``notifications``...)."""

    def counter_sink(self) -> Counter[str]:
        """The named counters as a :class:`~collections.Counter` a hot loop adds to
        (``sink[name] += n``), valid for the whole run; same effect as :meth:`count`."""

    def add_bytes_in(self, n: int) -> None:
        """Add ``n`` bytes received."""
