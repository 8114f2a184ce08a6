"""The interval series and phase histograms a snapshot keeps: typed, and their loaders.

The aggregator makes a :class:`SeriesRecord` of every interval it completes
(and merges old ones pairwise in a long run: then a record covers several
intervals). Its JSON (:func:`~protobench.engine.report_model.to_plain`) is a
record of the snapshot's ``series``, keys in field order: ``phase``,
``index``, ``elapsed`` (run time at the end), ``duration``, ``lag_ms`` (the
largest worker's event-loop lag), ``inflight``, ``worker_lag_ms`` (keyed by
the worker's number, a string in JSON) and ``ops``: each op's
:class:`~protobench.engine.summaries.OpSummary` with its encoded histograms
(``hist``, in the open model ``hist_uncorrected``, and with the kernel clock
``hist_delay``, the generator's delay).

:data:`PhaseHistograms` are each phase's merged histograms per op, encoded
(:class:`EncodedHistograms`): what the report's figures come from.

:func:`load_series` and :func:`load_histograms` read them back (``diff``, ``export``, the
HTML report, a replay, a baseline) with pydantic, imported only then; the
defaults are those of records written before a field existed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NotRequired, TypedDict

from protobench.engine.report_model import ReportError, validated
from protobench.engine.summaries import OpSummary

if TYPE_CHECKING:
    from pydantic import TypeAdapter


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesRecord:
    """One interval (or several merged) of one phase: where it ends, how long, each op's figures."""

    phase: str
    index: int
    elapsed: float
    duration: float
    lag_ms: float = 0.0
    inflight: int = 0
    worker_lag_ms: dict[int, float] = field(default_factory=dict)
    ops: dict[str, OpSummary]

    @property
    def start(self) -> float:
        """The run time at the record's start."""
        return self.elapsed - self.duration


class EncodedHistograms(TypedDict):
    """One op's histograms over a phase, encoded: from the intended send, (open model, in
    snapshots of that time on) from the actual send, and (kernel clock) the generator's
    delay in taking up replies."""

    hist: str
    hist_uncorrected: NotRequired[str]
    hist_delay: NotRequired[str]


type PhaseHistograms = dict[str, dict[str, EncodedHistograms]]
"""Each phase's :class:`EncodedHistograms` per op."""


@functools.cache
def _adapter() -> TypeAdapter[list[SeriesRecord]]:
    from pydantic import TypeAdapter  # noqa: PLC0415 - pydantic only when a series is read

    return TypeAdapter(list[SeriesRecord])


def load_series(data: object, where: str = "series") -> list[SeriesRecord]:
    """The typed records of a parsed JSON series; :class:`ReportError` naming a bad field."""
    if not isinstance(data, list):
        kind = "null" if data is None else f"a JSON {type(data).__name__}"
        raise ReportError(f"{where}: expected a JSON array, found {kind}")
    return validated(_adapter(), data, where)


@functools.cache
def _histograms_adapter() -> TypeAdapter[PhaseHistograms]:
    from pydantic import TypeAdapter  # noqa: PLC0415 - pydantic only when histograms are read

    return TypeAdapter(PhaseHistograms)


def load_histograms(data: object, where: str = "histograms") -> PhaseHistograms:
    """The typed phase histograms of parsed JSON; :class:`ReportError` naming a bad field."""
    if not isinstance(data, dict):
        kind = "null" if data is None else f"a JSON {type(data).__name__}"
        raise ReportError(f"{where}: expected a JSON object, found {kind}")
    return validated(_histograms_adapter(), data, where)
