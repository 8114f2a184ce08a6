"""Recording and merging of latency histograms and counters.

Every histogram comes from :func:`new_histogram` (1 µs .. 60 s, 3 significant
digits, values in microseconds), so merges are additions of counts arrays:
:func:`add_encoded` decodes an encoded histogram's counts and adds them with
numpy, building no histogram for them.

The hot path never touches a histogram: :class:`OpRecorder` appends raw
nanosecond latencies to an ``array('q')`` (tens of nanoseconds), and every
few tens of milliseconds :func:`fold` adds the batch to the interval's
histogram with numpy, computing the HdrHistogram bucket index of every value
at once. Values above the highest
trackable value are recorded at the top and counted in ``out_of_range``, never
dropped. After the fold the buffer is cleared, so memory stays flat however
long the run.

hdrhistogram's histogram and its encoder refer to each other, so every
histogram it makes would wait for Python's cycle collector, which a worker
that allocates few containers runs rarely: a run's workers grew by tens of
megabytes of dead histograms between collections. :func:`new_histogram`
makes the encoder's reference weak and :func:`add_encoded` frees the decoded
histogram it adds (one of another shape), so every histogram is freed as soon
as it is dropped.

:class:`OpInterval` is what a worker sends for one operation and one interval;
it is a plain dict on the wire (:meth:`OpInterval.to_wire`).
"""

from __future__ import annotations

import math
import weakref
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

import numpy as np
from hdrh.codec import HdrHistogramEncoder
from hdrh.histogram import HdrHistogram

from protobench.vocab.errors import OpError
from protobench.vocab.percentiles import PERCENTILES
from protobench.vocab.recorder import Tally

LOWEST_US = 1
HIGHEST_US = 60_000_000
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    """The one histogram factory: 1 µs .. 60 s, 3 significant digits; freed when dropped."""
    hist = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
    hist.encoder.histogram = weakref.proxy(hist)
    return hist


Counts = np.ndarray[Any, np.dtype[np.int64]]

_SHAPE = new_histogram()
_SUB_BUCKET_MASK = int(_SHAPE.sub_bucket_mask)
_UNIT_MAGNITUDE = int(_SHAPE.unit_magnitude)
_HALF_COUNT_MAGNITUDE = int(_SHAPE.sub_bucket_half_count_magnitude)
_HALF_COUNT = int(_SHAPE.sub_bucket_half_count)
_COUNTS_LEN = int(_SHAPE.counts_len)


def counts_view(hist: HdrHistogram) -> Counts:
    """The histogram's counts array as a numpy view (no copy)."""
    return np.frombuffer(hist.counts, dtype=np.int64)


def _factory_shaped(lowest: int, highest: int, digits: int) -> bool:
    return (lowest, highest, digits) == (LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def add_encoded(hist: HdrHistogram, encoded: str) -> None:
    """Add a histogram encoded by :func:`encode` to ``hist``.

    When both have the factory's shape (every histogram of ours) the counts are
    decoded into a bare array and added with numpy, with the count, minimum and
    maximum hdrhistogram's own ``add`` would give: no histogram is built for
    the addend (building one is most of the time a merge takes). Any other
    goes through hdrhistogram.
    """
    payload = HdrHistogramEncoder.decode(encoded, hist.b64_wrap)
    header = payload.payload
    shape = (header.lowest_trackable_value, header.highest_trackable_value)
    if not (
        _factory_shaped(*shape, header.significant_figures)
        and _factory_shaped(
            hist.lowest_trackable_value, hist.highest_trackable_value, hist.significant_figures
        )
    ):
        other = HdrHistogram(*shape, header.significant_figures, hdr_payload=payload)
        hist.add(other)
        other.encoder = None  # break the histogram <-> encoder cycle: freed now, not by the GC
        return
    found = payload.init_counts(_COUNTS_LEN)
    if not found["total"]:
        hist.min_value = 0  # what hdrhistogram's add of an empty histogram leaves
        return
    counts_view(hist)[:] += np.frombuffer(payload.get_counts(), dtype=np.int64)
    hist.total_count += found["total"]
    hist.max_value = max(hist.max_value, int(HIGHEST[found["max_nonzero_index"]]))
    lowest = int(_LOWEST[found["min_nonzero_index"]])
    hist.min_value = min(hist.get_min_value(), lowest)  # as hdrhistogram's add sets it


def fold(hist: HdrHistogram, values_ns: array[int] | list[int]) -> int:
    """Add nanosecond latencies to ``hist`` (in µs); return how many were out of range.

    Equivalent to ``hist.record_value(v // 1000)`` for every value, but
    vectorised. Negative values (a clock step) are recorded as 0.
    """
    if len(values_ns) == 0:
        return 0
    us = np.asarray(values_ns, dtype=np.int64) // 1000
    np.maximum(us, 0, out=us)
    out_of_range = int(np.count_nonzero(us > HIGHEST_US))
    if out_of_range:
        np.minimum(us, HIGHEST_US, out=us)
    masked = us | _SUB_BUCKET_MASK
    bit_length = np.frexp(masked.astype(np.float64))[1].astype(np.int64)
    bucket = bit_length - _UNIT_MAGNITUDE - (_HALF_COUNT_MAGNITUDE + 1)
    sub_bucket = us >> (bucket + _UNIT_MAGNITUDE)
    index = ((bucket + 1) << _HALF_COUNT_MAGNITUDE) + sub_bucket - _HALF_COUNT
    counts_view(hist)[:] += np.bincount(index, minlength=_COUNTS_LEN)[:_COUNTS_LEN]
    hist.total_count += len(us)
    hist.min_value = min(hist.min_value, int(us.min()))
    hist.max_value = max(hist.max_value, int(us.max()))
    return out_of_range


def encode(hist: HdrHistogram) -> str:
    """The histogram in HdrHistogram's compressed base64 V2 format."""
    return str(hist.encode().decode("ascii"))


def decode(encoded: str) -> HdrHistogram:
    """A histogram from :func:`encode` output, with the factory's shape."""
    hist = new_histogram()
    if encoded:
        add_encoded(hist, encoded)
    return hist


def merge(encoded: list[str]) -> HdrHistogram:
    """Exact sum of encoded histograms."""
    hist = new_histogram()
    for item in encoded:
        if item:
            add_encoded(hist, item)
    return hist


def _bucket_values() -> tuple[Counts, Counts]:
    """The lowest value and the width of every bucket of the factory's histograms."""
    index = np.arange(_COUNTS_LEN, dtype=np.int64)
    bucket = (index >> _HALF_COUNT_MAGNITUDE) - 1
    sub_bucket = (index & (_HALF_COUNT - 1)) + _HALF_COUNT
    low = bucket < 0
    sub_bucket[low] -= _HALF_COUNT
    bucket[low] = 0
    shift = bucket + _UNIT_MAGNITUDE
    return sub_bucket << shift, np.int64(1) << shift


_LOWEST, _WIDTH = _bucket_values()
HIGHEST: Counts = _LOWEST + _WIDTH - 1
"""For each counts index, the highest value (µs) equivalent to that bucket."""
_MIDDLE = (_LOWEST + (_WIDTH >> 1)).astype(np.float64)


def counts_summary(counts: Counts) -> dict[str, float]:
    """:func:`summary` of a histogram given as its counts array (see :func:`counts_view`).

    Vectorised: hdrhistogram's own percentile, mean and stddev walks take
    150-300 ms per histogram in Python; this takes well under a millisecond
    and gives the same values (the unit tests compare them).
    """
    cumulative = np.cumsum(counts)
    n = int(cumulative[-1])
    if n == 0:
        return {"count": 0}
    out: dict[str, float] = {"count": n}
    for p in PERCENTILES:
        target = max(int(p.value * n / 100 + 0.5), 1)
        out[p.key] = float(HIGHEST[int(np.searchsorted(cumulative, target))])
    nonzero = np.flatnonzero(counts)
    weights = counts[nonzero].astype(np.float64)
    middles = _MIDDLE[nonzero]
    mean = float(np.dot(weights, middles)) / n
    out["min"] = float(_LOWEST[nonzero[0]])
    out["max"] = float(HIGHEST[nonzero[-1]])
    out["mean"] = round(mean, 1)
    out["stddev"] = round(math.sqrt(float(np.dot(weights, (middles - mean) ** 2)) / n), 1)
    return out


def summary(hist: HdrHistogram) -> dict[str, float]:
    """Count, mean, min, max and the standard percentiles, in microseconds."""
    return counts_summary(counts_view(hist))


class OpRecorder:
    """Counters and raw latencies of one operation in one worker, for one interval.

    It implements :class:`protobench.vocab.recorder.Recorder`, the interface a
    plugin's stream session writes to. The engine's drivers use its fields
    directly: ``recorder.latencies.append(ns)`` for a success (the ok count
    is the number of latencies), ``recorder.error(exc)`` for a failure. The
    arrays are cleared in place, so a driver may keep their bound ``append``
    methods for the whole run. In the open model ``uncorrected`` receives the
    latency from the actual send time while ``latencies`` receives it from the
    intended send time, and ``lateness`` how long after its intended time an
    arrival that found a free session was sent (the generator's own precision,
    ``hist_lateness``). ``delays`` receives, for each success timed by the
    kernel's receive stamp, the generator's own delay: from that stamp to the
    engine's taking up the reply (``hist_delay``). :meth:`fold_pending` moves the
    latencies recorded so far into the interval's histograms; the worker calls it many times per
    interval, so that no single fold stalls its event loop for long (folding a
    whole second of 130,000 latencies at once took 3-5 ms, enough to show in
    the run's own p99).
    """

    __slots__ = (
        "_hist",
        "_hist_delay",
        "_hist_lateness",
        "_hist_uncorrected",
        "_ok",
        "_out_of_range",
        "bytes_in",
        "counters",
        "delays",
        "error_codes",
        "errors",
        "last_errors",
        "late",
        "latencies",
        "lateness",
        "name",
        "sent",
        "uncorrected",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.latencies: array[int] = array("q")
        self.uncorrected: array[int] = array("q")
        self.lateness: array[int] = array("q")
        self.delays: array[int] = array("q")
        self.bytes_in = 0
        self.sent = Tally()
        self.late = 0
        self.errors: Counter[str] = Counter()
        self.error_codes: Counter[str] = Counter()
        self.last_errors: dict[str, str] = {}
        self.counters: Counter[str] = Counter()
        self._ok = 0
        self._out_of_range = 0
        self._hist: HdrHistogram | None = None
        self._hist_uncorrected: HdrHistogram | None = None
        self._hist_lateness: HdrHistogram | None = None
        self._hist_delay: HdrHistogram | None = None

    def record(self, latency_ns: int) -> None:
        """One success with its latency in nanoseconds (a hot loop takes :meth:`latency_sink`)."""
        self.latencies.append(latency_ns)

    def latency_sink(self) -> Callable[[int], None]:
        """The latencies' bound ``append``: valid for the whole run (cleared in place)."""
        return self.latencies.append

    def delay_sink(self) -> Callable[[int], None]:
        """The generator delays' bound ``append``: valid for the whole run (cleared in place)."""
        return self.delays.append

    def counter_sink(self) -> Counter[str]:
        """The named counters, for a hot loop: valid for the whole run (cleared in place)."""
        return self.counters

    def add_bytes_in(self, n: int) -> None:
        """Add ``n`` bytes received."""
        self.bytes_in += n

    def add_bytes_out(self, n: int) -> None:
        """Add ``n`` bytes sent."""
        self.sent.n += n

    def bytes_out_sink(self) -> Tally:
        """The op's tally of bytes sent: valid for the whole run (reset in place)."""
        return self.sent

    def error(self, exc: OpError) -> None:
        """Count one failed operation by class (and code, when it has one)."""
        cls = str(exc.error_class)
        self.errors[cls] += 1
        if exc.code:
            self.error_codes[f"{cls}:{exc.code}"] += 1
        self.last_errors[cls] = str(exc)

    def count(self, name: str, n: int = 1) -> None:
        """Add to a named counter (``lost``, ``duplicated``, ``notifications``...)."""
        self.counters[name] += n

    def fold_pending(self, at_least: int = 0) -> None:
        """Fold the latencies recorded since the last fold into this interval's histograms.

        With ``at_least``, only once that many are waiting (a fold's numpy calls cost
        tens of µs however few values they take, enough to show in a slow run's CPU).
        """
        if at_least and max(len(self.latencies), len(self.lateness)) < at_least:
            return
        if self.latencies:
            if self._hist is None:
                self._hist = new_histogram()
            self._ok += len(self.latencies)
            self._out_of_range += fold(self._hist, self.latencies)
            del self.latencies[:]
        if self.uncorrected:
            if self._hist_uncorrected is None:
                self._hist_uncorrected = new_histogram()
            self._out_of_range += fold(self._hist_uncorrected, self.uncorrected)
            del self.uncorrected[:]
        if self.lateness:
            if self._hist_lateness is None:
                self._hist_lateness = new_histogram()
            fold(self._hist_lateness, self.lateness)
            del self.lateness[:]
        if self.delays:
            if self._hist_delay is None:
                self._hist_delay = new_histogram()
            fold(self._hist_delay, self.delays)
            del self.delays[:]

    def flush(self) -> OpInterval:
        """Fold the rest of this interval into an :class:`OpInterval` and reset."""
        self.fold_pending()
        hist, unc, lateness = self._hist, self._hist_uncorrected, self._hist_lateness
        delay = self._hist_delay
        item = OpInterval(
            ok=self._ok,
            errors=dict(self.errors),
            error_codes=dict(self.error_codes),
            last_errors=dict(self.last_errors),
            bytes_in=self.bytes_in,
            bytes_out=self.sent.n,
            late=self.late,
            out_of_range=self._out_of_range,
            counters=dict(self.counters),
            hist=encode(hist) if hist is not None else "",
            hist_uncorrected=encode(unc) if unc is not None else "",
            hist_lateness=encode(lateness) if lateness is not None else "",
            hist_delay=encode(delay) if delay is not None else "",
        )
        self._hist = self._hist_uncorrected = self._hist_lateness = self._hist_delay = None
        self._ok = self._out_of_range = 0
        self.bytes_in = 0
        self.sent.n = 0
        self.late = 0
        self.errors.clear()
        self.error_codes.clear()
        self.last_errors.clear()
        self.counters.clear()
        return item


@dataclass
class OpInterval:
    """One operation's results over one interval (from one worker, or merged)."""

    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    error_codes: dict[str, int] = field(default_factory=dict)
    last_errors: dict[str, str] = field(default_factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0
    late: int = 0
    out_of_range: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    hist: str = ""
    hist_uncorrected: str = ""
    hist_lateness: str = ""
    """Open model: send lateness (intended -> sent) of the arrivals that found a free session."""
    hist_delay: str = ""
    """The generator's delay: the reply's kernel receive stamp -> the engine taking it up."""

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def to_wire(self) -> OpWire:
        """Its non-empty fields (what a worker's ``STATS`` frame carries per op)."""
        return cast(OpWire, {k: v for k, v in self.__dict__.items() if v})

    @classmethod
    def from_wire(cls, data: OpWire) -> OpInterval:
        return cls(**data)


class OpWire(TypedDict, total=False):
    """An :class:`OpInterval` on the wire (JSON): its fields, the empty ones left out."""

    ok: int
    errors: dict[str, int]
    error_codes: dict[str, int]
    last_errors: dict[str, str]
    bytes_in: int
    bytes_out: int
    late: int
    out_of_range: int
    counters: dict[str, int]
    hist: str
    hist_uncorrected: str
    hist_lateness: str
    hist_delay: str


def _add_counts(dst: dict[str, int], src: dict[str, int]) -> None:
    for key, value in src.items():
        dst[key] = dst.get(key, 0) + value


class OpAccumulator:
    """Exact merge of many :class:`OpInterval` (across workers and intervals)."""

    def __init__(self) -> None:
        self.ok = 0
        self.errors: dict[str, int] = {}
        self.error_codes: dict[str, int] = {}
        self.last_errors: dict[str, str] = {}
        self.bytes_in = 0
        self.bytes_out = 0
        self.late = 0
        self.out_of_range = 0
        self.counters: dict[str, int] = {}
        self.hist = new_histogram()
        self.hist_uncorrected = new_histogram()
        self.hist_lateness = new_histogram()
        self.hist_delay = new_histogram()

    def add(self, item: OpInterval) -> None:
        self.ok += item.ok
        _add_counts(self.errors, item.errors)
        _add_counts(self.error_codes, item.error_codes)
        self.last_errors.update(item.last_errors)
        self.bytes_in += item.bytes_in
        self.bytes_out += item.bytes_out
        self.late += item.late
        self.out_of_range += item.out_of_range
        _add_counts(self.counters, item.counters)
        if item.hist:
            add_encoded(self.hist, item.hist)
        if item.hist_uncorrected:
            add_encoded(self.hist_uncorrected, item.hist_uncorrected)
        if item.hist_lateness:
            add_encoded(self.hist_lateness, item.hist_lateness)
        if item.hist_delay:
            add_encoded(self.hist_delay, item.hist_delay)

    def absorb(self, other: OpAccumulator) -> None:
        """Add another accumulator (histograms by the C fast path)."""
        self.ok += other.ok
        _add_counts(self.errors, other.errors)
        _add_counts(self.error_codes, other.error_codes)
        self.last_errors.update(other.last_errors)
        self.bytes_in += other.bytes_in
        self.bytes_out += other.bytes_out
        self.late += other.late
        self.out_of_range += other.out_of_range
        _add_counts(self.counters, other.counters)
        if other.hist.get_total_count():
            self.hist.add(other.hist)
        if other.hist_uncorrected.get_total_count():
            self.hist_uncorrected.add(other.hist_uncorrected)
        if other.hist_lateness.get_total_count():
            self.hist_lateness.add(other.hist_lateness)
        if other.hist_delay.get_total_count():
            self.hist_delay.add(other.hist_delay)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def to_interval(self) -> OpInterval:
        """This accumulation as one encoded :class:`OpInterval` (for storage)."""
        return OpInterval(
            ok=self.ok,
            errors=dict(self.errors),
            error_codes=dict(self.error_codes),
            last_errors=dict(self.last_errors),
            bytes_in=self.bytes_in,
            bytes_out=self.bytes_out,
            late=self.late,
            out_of_range=self.out_of_range,
            counters=dict(self.counters),
            hist=encode(self.hist) if self.hist.get_total_count() else "",
            hist_uncorrected=(
                encode(self.hist_uncorrected) if self.hist_uncorrected.get_total_count() else ""
            ),
            hist_lateness=(
                encode(self.hist_lateness) if self.hist_lateness.get_total_count() else ""
            ),
            hist_delay=encode(self.hist_delay) if self.hist_delay.get_total_count() else "",
        )
