"""Exports of a snapshot: HdrHistogram interval logs, percentile distributions, CSV, JSON.

* ``hlog``: the HdrHistogram interval log format (version 1.3, written with
  hdrh's ``HistogramLogWriter``), readable by HdrHistogram's
  ``HistogramLogProcessor``, HdrHistogramVisualizer and ``hdrh.log``'s
  ``HistogramLogReader``. One line per interval for all operations together
  (untagged, what the log processor reads by default) and one line per
  operation tagged ``Tag=<op>`` (``-tag <op>`` in the log processor). In the
  open model the latencies from the actual send (not corrected for
  coordinated omission) follow as ``Tag=uncorrected`` (all operations) and
  ``Tag=uncorrected.<op>``. Values are in **microseconds** (give the log
  processor ``-outputValueUnitRatio 1000`` to print milliseconds); the
  Interval_Max column is in milliseconds. Timestamps are seconds since the
  run's start, which ``#[StartTime]`` and ``#[BaseTime]`` give (the wall time
  at which the run was started). Each line holds one interval of one series:
  summing the lines of one tag (``None`` for the untagged) gives that series.
* ``hgrm``: HdrHistogram's percentile distribution text (as wrk2 prints it,
  values in milliseconds) of the phase's merged histograms, per operation and
  in total, corrected and (open model) uncorrected: :mod:`protobench.snapshots.hgrm`.
* ``csv``: one row per interval and operation, and a ``TOTAL`` row per
  interval: absolute times (ISO 8601 UTC and seconds since the epoch) and times
  from the run's start, counts, latencies in microseconds (corrected and, in
  the open model, uncorrected), errors by class, protocol counters, and the
  resources sampled nearest the interval's end (all workers' CPU, the
  target's CPU and RSS, the host's CPU).
* ``json``: the whole snapshot.

Each export covers one phase (``sustain`` by default, ``all`` for every phase).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any, TextIO

from hdrh.log import HistogramLogWriter

from protobench.engine.metrics import decode
from protobench.engine.report_model import to_plain
from protobench.engine.resource_log import ResourceRecord
from protobench.engine.summaries import LatencySummary
from protobench.snapshots.hgrm import write_hgrm
from protobench.snapshots.model import Snapshot
from protobench.snapshots.series import TOTAL, intervals
from protobench.snapshots.series import latency as series_latency
from protobench.vocab.percentiles import PERCENTILE_KEYS

FORMAT_VERSION = "1.3"
FORMATS = ("hlog", "hgrm", "csv", "json")
PHASES = ("warmup", "sustain", "drain", "all")
CSV_COLUMNS = (
    "phase",
    "index",
    "start_time",
    "end_time",
    "start_epoch",
    "end_epoch",
    "start_s",
    "end_s",
    "duration_s",
    "op",
    "ok",
    "errors",
    "error_rate",
    "throughput",
    "bytes_in",
    "late",
    "out_of_range",
    *(f"{key}_us" for key in PERCENTILE_KEYS),
    "min_us",
    "max_us",
    "mean_us",
    *(f"uncorrected_{key}_us" for key in PERCENTILE_KEYS),
    "uncorrected_max_us",
    "errors_by_class",
    "counters",
    "generator_cpu",
    "target_cpu",
    "target_rss",
    "host_cpu",
)
UNCORRECTED = "uncorrected"
"""The tag of the uncorrected histograms in an hlog (``uncorrected.<op>`` for one op)."""
_OTHER_LATENCY_COLUMNS = ("min", "max", "mean")
_UNCORRECTED_COLUMNS = (*PERCENTILE_KEYS, "max")
_TAG_UNSAFE = re.compile(r"[\s,=]")


def _phase(phase: str) -> str | None:
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r} (expected one of {', '.join(PHASES)})")
    return None if phase == "all" else phase


def tag_of(op: str) -> str:
    """The log tag of an operation: no whitespace, commas or '=' (the format's separators)."""
    return _TAG_UNSAFE.sub("_", op)


def write_hlog(snapshot: Snapshot, out: TextIO, phase: str = "sustain") -> int:
    """Write the interval log of ``phase``; return the number of interval lines."""
    report = snapshot.report
    started = dt.datetime.fromisoformat(report.started_at)
    epoch = started.timestamp()
    writer = HistogramLogWriter(out)
    writer.output_comment(f"[Histogram log format version {FORMAT_VERSION}]")
    writer.output_comment(
        f"[protobench {snapshot.provenance['tool_version']} snapshot {snapshot.id}, "
        f"profile {report.profile}, values in microseconds; "
        "untagged lines: all operations, Tag=<op>: one operation, "
        f"Tag={UNCORRECTED}[.<op>]: from the actual send (open model)]"
    )
    writer.output_comment(f"[StartTime: {epoch:.3f} (seconds since epoch), {started.isoformat()}]")
    writer.output_base_time(epoch * 1000.0)
    writer.output_legend()
    ops = snapshot.operations
    selected = intervals(snapshot, _phase(phase))
    open_model = any(f.hist_uncorrected for i in selected for f in i.ops.values())
    series = [(op, False, None if op == TOTAL else tag_of(op)) for op in [TOTAL, *ops]]
    if open_model:
        series += [
            (op, True, UNCORRECTED if op == TOTAL else f"{UNCORRECTED}.{tag_of(op)}")
            for op in [TOTAL, *ops]
        ]
    lines = 0
    for item in selected:
        for op, uncorrected, tag in series:
            figures = item.ops.get(op)
            encoded = None
            if figures is not None:
                encoded = figures.hist_uncorrected if uncorrected else figures.hist
            hist = decode(encoded or "")
            hist.set_start_time_stamp(item.start * 1000.0)
            hist.set_end_time_stamp(item.end * 1000.0)
            if tag is not None:
                out.write(f"Tag={tag},")
            writer.output_interval_histogram(
                hist, item.start, item.end, max_value_unit_ratio=1000.0
            )
            lines += 1
    return lines


def _blank(value: float | None) -> float | str:
    return "" if value is None else value


def _pairs(values: Mapping[str, int]) -> str:
    return ";".join(f"{name}={count}" for name, count in sorted(values.items()))


def _at(start: dt.datetime, seconds: float) -> tuple[str, float]:
    """(ISO 8601 UTC with milliseconds, seconds since the epoch) of ``seconds`` after ``start``."""
    moment = (start + dt.timedelta(seconds=seconds)).astimezone(dt.UTC)
    return moment.isoformat(timespec="milliseconds"), round(moment.timestamp(), 6)


def _resources_at(samples: list[ResourceRecord], end: float, duration: float) -> list[Any]:
    """(generator CPU, target CPU, target RSS, host CPU) of the sample nearest ``end``.

    Resources are sampled once an interval on their own clock: the sample
    nearest the interval's end, within half an interval, covers about the
    same second. The generator's CPU is that of all worker processes (% of one
    core). Blanks when no sample is that near.
    """
    near = [s for s in samples if abs(s["elapsed"] - end) <= duration / 2]
    if not near:
        return ["", "", "", ""]
    sample = min(near, key=lambda s: abs(s["elapsed"] - end))
    target = sample["target"]
    return [
        round(sum(w["cpu"] for w in sample["workers"]), 1),
        _blank(target["cpu"] if target else None),
        _blank(target["rss"] if target else None),
        sample["host"]["cpu"],
    ]


def write_csv(snapshot: Snapshot, out: TextIO, phase: str = "sustain") -> int:
    """Write the interval series of ``phase`` as CSV; return the number of data rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    ops = snapshot.operations
    started = dt.datetime.fromisoformat(snapshot.report.started_at)
    samples = snapshot.resources
    rows = 0
    for item in intervals(snapshot, _phase(phase)):
        resources = _resources_at(samples, item.end, item.duration)
        (start_time, start_epoch), (end_time, end_epoch) = (
            _at(started, item.start),
            _at(started, item.end),
        )
        for op in [*ops, TOTAL]:
            figures = item.ops.get(op)
            if figures is None:
                continue
            latency = figures.latency_us
            uncorrected = figures.latency_uncorrected_us or LatencySummary()
            writer.writerow(
                [
                    item.phase,
                    item.index,
                    start_time,
                    end_time,
                    start_epoch,
                    end_epoch,
                    round(item.start, 6),
                    round(item.end, 6),
                    round(item.duration, 6),
                    op,
                    figures.ok,
                    figures.errors,
                    figures.error_rate,
                    figures.throughput,
                    figures.bytes_in,
                    figures.late,
                    figures.out_of_range,
                    *(_blank(series_latency(figures, name)) for name in PERCENTILE_KEYS),
                    *(_blank(latency.value(name)) for name in _OTHER_LATENCY_COLUMNS),
                    *(_blank(uncorrected.value(name)) for name in _UNCORRECTED_COLUMNS),
                    _pairs(figures.errors_by_class),
                    _pairs(figures.counters),
                    *resources,
                ]
            )
            rows += 1
    return rows


def write_json(snapshot: Snapshot, out: TextIO) -> None:
    """Write the whole snapshot as indented JSON."""
    json.dump(to_plain(snapshot), out, indent=2)
    out.write("\n")


def export(snapshot: Snapshot, fmt: str, out: TextIO, phase: str = "sustain") -> None:
    """Write ``snapshot`` to ``out`` in format ``fmt`` (one of :data:`FORMATS`) for ``phase``."""
    if fmt == "hlog":
        write_hlog(snapshot, out, phase)
    elif fmt == "hgrm":
        write_hgrm(snapshot, out, _phase(phase))
    elif fmt == "csv":
        write_csv(snapshot, out, phase)
    elif fmt == "json":
        write_json(snapshot, out)
    else:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
