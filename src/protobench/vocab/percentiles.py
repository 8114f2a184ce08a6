"""The latency percentiles protobench reports, declared once.

Every table, report key, export column, diff metric and chart derives its list
from :data:`PERCENTILES`: a percentile ``99.9`` is the report key ``p999`` (a
JSON key and a Python name, no dot) and is shown as ``p99.9``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Percentile:
    """One reported percentile: its value, its report key and its label."""

    value: float
    """The percentile, e.g. ``99.9``."""

    @property
    def label(self) -> str:
        """How tables and charts show it: ``p99.9``."""
        return f"p{self.value:g}"

    @property
    def key(self) -> str:
        """Its key in the report, the snapshot and the exports: ``p999``."""
        return self.label.replace(".", "")


PERCENTILES = tuple(Percentile(value) for value in (50.0, 90.0, 95.0, 99.0, 99.9))
"""The percentiles of every latency summary, in order."""
PERCENTILE_KEYS = tuple(p.key for p in PERCENTILES)
"""``("p50", "p90", "p95", "p99", "p999")``."""
PERCENTILE_LABELS = {p.key: p.label for p in PERCENTILES}
"""Report key -> label (``p999`` -> ``p99.9``)."""
