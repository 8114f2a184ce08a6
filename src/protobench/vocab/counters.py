"""Counter names that both the engine and protocol plugins write or read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

BEHIND: Final = "behind"
"""The counter of arrivals the open model's driver took up late (its own lateness)."""
CONNECTS: Final = "connects"
"""The counter of transport connections opened: the engine counts one per session open, or a
plugin whose sessions share or reopen connections counts its own (``counts_connects``)."""
DOWN_US: Final = "down_us"
"""The workers' counter of session-microseconds spent without a connection while wanted."""
STREAM_SAMPLES: Final = "stream_samples"
"""The sum of the streams in flight on each connection of an op, sampled every 100 ms (HTTP/2):
over :data:`CONNECTION_SAMPLES`, the streams in flight per connection."""
CONNECTION_SAMPLES: Final = "connection_samples"
"""How many connections :data:`STREAM_SAMPLES` sampled."""
OK_TOTAL: Final = "ok"
"""In what a plugin diagnoses (``ProtocolPlugin.diagnose``): the op's exchanges that succeeded."""
ERRORS_PREFIX: Final = "errors:"
"""In what a plugin diagnoses: ``errors:CLASS`` is the op's exchanges that failed with CLASS."""


def without_stream_samples(counters: Mapping[str, int]) -> Mapping[str, int]:
    """``counters`` but :data:`STREAM_SAMPLES` and :data:`CONNECTION_SAMPLES` (samples, not
    counts: what they say is :func:`streams_per_connection`)."""
    if CONNECTION_SAMPLES not in counters:
        return counters
    return {k: v for k, v in counters.items() if k not in (STREAM_SAMPLES, CONNECTION_SAMPLES)}


def streams_per_connection(counters: Mapping[str, int]) -> float | None:
    """The mean streams in flight per connection that the sample counters give (``None``: none
    sampled)."""
    sampled = counters.get(CONNECTION_SAMPLES, 0)
    return round(counters.get(STREAM_SAMPLES, 0) / sampled, 2) if sampled else None
