"""The ``hgrm`` export: HdrHistogram's percentile distribution text, as wrk2 prints it.

The text of Java HdrHistogram's ``outputPercentileDistribution`` (what wrk2's
``--latency``, ``HistogramLogProcessor`` and the HdrHistogram plotter at
hdrhistogram.github.io/HdrHistogram/plotFiles.html use): a
``Value Percentile TotalCount 1/(1-Percentile)`` header, one row per
percentile tick (5 ticks per half distance to 100%), the 100% row without the
last column, then ``#[Mean = …, StdDeviation = …]``, ``#[Max = …, Total count
= …]`` and ``#[Buckets = …, SubBuckets = …]``. Values are in **milliseconds**
(recorded in microseconds, divided by 1000, printed with 3 decimals).

hdrh's own ``output_percentile_distribution`` differs from HdrHistogram's
(its percentile iterator does not round the half distance down to a power of
two, so its ticks are 0.1, 0.19, 0.271… instead of 0.1, 0.2, 0.3…; its
standard deviation is not scaled to the output unit; ``Total count`` is
written ``TotalCount`` as a decimal), so the rows are stepped here as
HdrHistogram's ``PercentileIterator`` steps them, over hdrh's recorded values.

One section per series, each opened by a ``#`` comment line naming it: TOTAL
and each operation, corrected and (open model) uncorrected (for ``TOTAL``
only when every operation has its uncorrected histogram,
:func:`~protobench.snapshots.series.has_uncorrected`), from the
snapshot's phase histograms (merged over every worker and interval; the
report's figures come from them).
"""

from __future__ import annotations

import math
from typing import TextIO

from hdrh.histogram import HdrHistogram

from protobench.engine.metrics import SIGNIFICANT_DIGITS, new_histogram
from protobench.snapshots.model import Snapshot
from protobench.snapshots.series import TOTAL, HistKey, has_uncorrected, phase_histogram

TICKS_PER_HALF_DISTANCE = 5
MS_PER_US = 1000.0
"""Recorded values (µs) are divided by this to print milliseconds."""


def percentile_rows(hist: HdrHistogram, ticks: int) -> list[tuple[int, float, int]]:
    """(value, percentile level, count up to the value) of each tick, as HdrHistogram steps.

    Levels start at 0% and step by ``100 / (ticks * 2**(floor(log2(100 / (100 - level))) + 1))``:
    ``ticks`` steps per half of the distance left to 100%. A level is reported
    at the first recorded value whose cumulative percentile reaches it; the
    last recorded value is reported once more at 100%.
    """
    total = hist.get_total_count()
    rows: list[tuple[int, float, int]] = []
    level = 0.0
    value = 0
    for step in hist.get_recorded_iterator():
        value, cumulative = step.value_iterated_to, step.total_count_to_this_value
        while 100.0 * cumulative / total >= level:
            rows.append((value, level, cumulative))
            if cumulative == total:
                break
            half_distance = 2 ** (int(math.log2(100.0 / (100.0 - level))) + 1)
            level += 100.0 / (ticks * half_distance)
    if total:
        rows.append((value, 100.0, total))
    return rows


def percentile_distribution(
    hist: HdrHistogram, out: TextIO, ratio: float = MS_PER_US, ticks: int = TICKS_PER_HALF_DISTANCE
) -> None:
    """Write HdrHistogram's percentile distribution of ``hist``, values divided by ``ratio``."""
    digits = SIGNIFICANT_DIGITS
    out.write(f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n")
    for value, level, cumulative in percentile_rows(hist, ticks):
        fraction = level / 100.0
        row = f"{value / ratio:12.{digits}f} {fraction:2.12f} {cumulative:10d}"
        out.write(row + (f" {1.0 / (1.0 - fraction):14.2f}\n" if level != 100.0 else "\n"))
    mean, stddev = hist.get_mean_value() / ratio, hist.get_stddev() / ratio
    out.write(f"#[Mean    = {mean:12.{digits}f}, StdDeviation   = {stddev:12.{digits}f}]\n")
    peak = hist.get_max_value() / ratio
    out.write(f"#[Max     = {peak:12.{digits}f}, Total count    = {hist.get_total_count():12d}]\n")
    buckets, sub_buckets = hist.bucket_count, hist.sub_bucket_count
    out.write(f"#[Buckets = {buckets:12d}, SubBuckets     = {sub_buckets:12d}]\n")


def write_hgrm(snapshot: Snapshot, out: TextIO, phase: str | None = "sustain") -> int:
    """Write one percentile distribution per series of ``phase`` (all phases when ``None``).

    From the snapshot's phase histograms (those its report's figures come
    from). Return the number of sections written.
    """
    histograms = snapshot.histograms
    phases = [phase] if phase is not None else list(histograms)
    ops = [TOTAL, *snapshot.operations]
    open_model = snapshot.report.model.type == "open"
    whole = [op for op in ops if all(has_uncorrected([snapshot], op, name) for name in phases)]
    kinds: list[tuple[HistKey, str, list[str]]] = [
        ("hist", "corrected" if open_model else "latency", ops)
    ]
    if open_model:
        kinds.append(("hist_uncorrected", "uncorrected", whole))
    out.write(
        f"# protobench {snapshot.provenance['tool_version']} snapshot {snapshot.id}, "
        f"profile {snapshot.report.profile}, phase {phase or 'all'}\n"
        "# HdrHistogram percentile distribution (outputPercentileDistribution); "
        "values in milliseconds\n"
    )
    if open_model:
        out.write(
            "# corrected: from the intended send (coordinated omission corrected); "
            "uncorrected: from the actual send\n"
        )
    sections = 0
    for key, label, names in kinds:
        for op in names:
            hist = new_histogram()
            for name in phases:
                hist.add(phase_histogram([snapshot], op, name, key))
            out.write(f"\n# op: {op}, {label}\n")
            percentile_distribution(hist, out)
            sections += 1
    return sections
