"""The typed figures of a run: a latency distribution, an operation's summary, a phase's.

These are the ``phases`` of the report (``--json``), the ``ops``/``total`` of
each interval event and the records of a snapshot's series, exactly as the
JSON shows them: :func:`protobench.engine.report_model.to_plain` turns them
into JSON values, dropping the fields marked :data:`OMIT_NONE` while they are
``None`` (a key absent from the JSON, not ``null``). The engine computes
them once (:mod:`protobench.engine.aggregate`); verdicts, thresholds, the
monitor, ``diff`` and the HTML report read their fields.

Defaults are those of reports written before a field existed, so an old
snapshot loads (:func:`protobench.engine.report_model.load_report`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OMIT_NONE: dict[str, Any] = {"omit_none": True}
"""Field metadata: the key is left out of the JSON while the value is ``None``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencySummary:
    """Count, percentiles, min, max, mean and standard deviation in microseconds.

    An empty histogram has only ``count`` (0); the total of ops whose latencies
    measure different things has nothing at all (``{}``).
    """

    count: int | None = field(default=None, metadata=OMIT_NONE)
    p50: float | None = field(default=None, metadata=OMIT_NONE)
    p90: float | None = field(default=None, metadata=OMIT_NONE)
    p95: float | None = field(default=None, metadata=OMIT_NONE)
    p99: float | None = field(default=None, metadata=OMIT_NONE)
    p999: float | None = field(default=None, metadata=OMIT_NONE)
    min: float | None = field(default=None, metadata=OMIT_NONE)
    max: float | None = field(default=None, metadata=OMIT_NONE)
    mean: float | None = field(default=None, metadata=OMIT_NONE)
    stddev: float | None = field(default=None, metadata=OMIT_NONE)

    def value(self, name: str) -> float | None:
        """The figure ``name`` (``p99``, ``max``, ``mean``...), ``None`` when absent."""
        found: float | None = getattr(self, name, None) if name in LATENCY_FIELDS else None
        return None if found is None else float(found)


LATENCY_FIELDS = frozenset(LatencySummary.__dataclass_fields__)


MIXED = "mixed"
"""The ``latency_kind`` of a total over ops whose latencies measure different things (it has
no latency then)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OpSummary:
    """One operation's (or the total's) figures over a phase or an interval.

    ``latency_uncorrected_us`` is the open model's latency from the actual send;
    ``send_lateness_us`` how late the open model's sends were (when measured);
    ``generator_delay_us`` the generator's own delay in taking up replies (from
    the kernel's receive stamp to the engine's recording; only with the kernel
    clock); ``latency_by_kind`` the total's latencies per kind when ops measure
    different things; ``streams_per_connection`` the mean streams in flight on each
    connection (HTTP/2, sampled every 100 ms); ``hist``/``hist_uncorrected``/``hist_delay``
    the encoded histograms of a series record or an interval event (never in the report).
    """

    ok: int
    errors: int
    error_rate: float
    throughput: float
    bytes_in: int = 0
    bytes_out: int = 0
    errors_by_class: dict[str, int] = field(default_factory=dict)
    error_codes: dict[str, int] = field(default_factory=dict)
    last_errors: dict[str, str] | None = field(default=None, metadata=OMIT_NONE)
    late: int = 0
    out_of_range: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    counter_rates: dict[str, float] = field(default_factory=dict)
    down_s: float = 0.0
    down_share: float | None = field(default=None, metadata=OMIT_NONE)
    streams_per_connection: float | None = field(default=None, metadata=OMIT_NONE)
    latency_kind: str = "round_trip"
    latency_us: LatencySummary
    latency_uncorrected_us: LatencySummary | None = field(default=None, metadata=OMIT_NONE)
    send_lateness_us: LatencySummary | None = field(default=None, metadata=OMIT_NONE)
    generator_delay_us: LatencySummary | None = field(default=None, metadata=OMIT_NONE)
    latency_by_kind: dict[str, LatencySummary] | None = field(default=None, metadata=OMIT_NONE)
    hist: str | None = field(default=None, metadata=OMIT_NONE)
    hist_uncorrected: str | None = field(default=None, metadata=OMIT_NONE)
    hist_delay: str | None = field(default=None, metadata=OMIT_NONE)

    @property
    def attempts(self) -> int:
        """Successes and failures: every exchange that ended."""
        return self.ok + self.errors

    @property
    def arrivals(self) -> int:
        """Open model: the arrivals due, sent at once to a free session or ``late``
        (0 in the closed model). Not :attr:`attempts`: an arrival that waited for a
        session that never opened is due, and no exchange."""
        sent = (self.send_lateness_us.count or 0) if self.send_lateness_us is not None else 0
        return sent + self.late

    @property
    def late_share(self) -> float:
        """The share of the arrivals due that found no free session, in [0, 1]."""
        arrivals = self.arrivals
        return self.late / arrivals if arrivals else 0.0


EMPTY_OP = OpSummary(
    ok=0, errors=0, error_rate=0.0, throughput=0.0, latency_us=LatencySummary(count=0)
)
"""The figures of an op that did nothing (what a missing op reads as)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseSummary:
    """A phase (warmup, sustain, drain): its real start and end in the run, total and ops."""

    duration_s: float
    start_s: float | None = field(default=None, metadata=OMIT_NONE)
    end_s: float | None = field(default=None, metadata=OMIT_NONE)
    total: OpSummary
    ops: dict[str, OpSummary]

    def scope(self, op: str | None) -> OpSummary | None:
        """The figures of ``op`` (``None``: the total), ``None`` when the phase has no such op."""
        return self.total if op is None else self.ops.get(op)
