"""The recorder interface a protocol plugin writes to (a stream session's ``run(recorder)``).

The engine implements it (``engine.metrics.OpRecorder``, one per operation per
worker); a plugin types against :class:`Recorder` and never imports the
engine. Latencies are nanoseconds; a success is one recorded latency (the ok
count is the number of latencies). Hot loops take their sinks once, when the
session starts running (:meth:`Recorder.latency_sink`, :meth:`Recorder.counter_sink`,
:meth:`Recorder.bytes_out_sink`, :meth:`Recorder.delay_sink`): they stay valid for the
whole run, so a message costs what an ``append`` (or an integer add) costs. A
request/response session gets its op's :class:`Tally` of bytes sent when it opens
(``SessionContext.sent``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Protocol

from protobench.vocab.errors import OpError


class Tally:
    """A running count of bytes sent: a hot path adds to :attr:`n` (``tally.n += size``).

    The engine reads and resets it once per interval; a session that was given
    none counts into a tally of its own that nobody reads.
    """

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class Recorder(Protocol):
    """Where a session records its exchanges, failures, counters and bytes in and out."""

    def record(self, latency_ns: int) -> None:
        """One success with its latency in nanoseconds."""

    def latency_sink(self) -> Callable[[int], None]:
        """A fast :meth:`record` for a hot loop, valid for the whole run."""

    def delay_sink(self) -> Callable[[int], None]:
        """Where a hot loop appends, for a success timed by the kernel's receive stamp, the
        generator's own delay in nanoseconds (from that stamp to the session taking the
        message up: ``generator_delay``), valid for the whole run."""

    def error(self, exc: OpError) -> None:
        """One failed operation, counted by its class (and code)."""

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the named counter (``lost``, ``received``, ``notifications``...)."""

    def counter_sink(self) -> Counter[str]:
        """The named counters as a :class:`~collections.Counter` a hot loop adds to
        (``sink[name] += n``), valid for the whole run; same effect as :meth:`count`."""

    def add_bytes_in(self, n: int) -> None:
        """Add ``n`` bytes received."""

    def add_bytes_out(self, n: int) -> None:
        """Add ``n`` bytes sent."""

    def bytes_out_sink(self) -> Tally:
        """The op's :class:`Tally` of bytes sent, for a hot loop (``sink.n += size``),
        valid for the whole run; same effect as :meth:`add_bytes_out`."""
