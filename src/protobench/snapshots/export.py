"""Exports of a snapshot: HdrHistogram interval logs, CSV of the interval series, JSON.

* ``hlog``: the HdrHistogram interval log format (version 1.3, written with
  hdrh's ``HistogramLogWriter``), readable by HdrHistogram's
  ``HistogramLogProcessor``, HdrHistogramVisualizer and ``hdrh.log``'s
  ``HistogramLogReader``. One line per interval for all operations together
  (untagged, what the log processor reads by default) and one line per
  operation tagged ``Tag=<op>`` (``-tag <op>`` in the log processor). Values
  are in **microseconds** (give the log processor ``-outputValueUnitRatio
  1000`` to print milliseconds); the Interval_Max column is in milliseconds.
  Timestamps are seconds since the run's start, which ``#[StartTime]`` and
  ``#[BaseTime]`` give (the wall time at which the run was started).
* ``csv``: one row per interval and operation, and a ``TOTAL`` row per
  interval; latencies in microseconds.
* ``json``: the whole snapshot.

Each export covers one phase (``sustain`` by default, ``all`` for every phase).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from typing import Any, TextIO

from hdrh.log import HistogramLogWriter

from protobench.engine.metrics import decode
from protobench.snapshots.series import TOTAL, intervals, operations

FORMAT_VERSION = "1.3"
FORMATS = ("hlog", "csv", "json")
PHASES = ("warmup", "sustain", "drain", "all")
CSV_COLUMNS = (
    "phase",
    "index",
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
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    "min_us",
    "max_us",
    "mean_us",
    "errors_by_class",
)
_LATENCY_COLUMNS = ("p50", "p90", "p99", "p999", "min", "max", "mean")
_TAG_UNSAFE = re.compile(r"[\s,=]")


def _phase(phase: str) -> str | None:
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r} (expected one of {', '.join(PHASES)})")
    return None if phase == "all" else phase


def tag_of(op: str) -> str:
    """The log tag of an operation: no whitespace, commas or '=' (the format's separators)."""
    return _TAG_UNSAFE.sub("_", op)


def write_hlog(snapshot: dict[str, Any], out: TextIO, phase: str = "sustain") -> int:
    """Write the interval log of ``phase``; return the number of interval lines."""
    started = dt.datetime.fromisoformat(snapshot["report"]["started_at"])
    epoch = started.timestamp()
    writer = HistogramLogWriter(out)
    writer.output_comment(f"[Histogram log format version {FORMAT_VERSION}]")
    writer.output_comment(
        f"[protobench {snapshot['provenance']['tool_version']} snapshot {snapshot['id']}, "
        f"profile {snapshot['report']['profile']}, values in microseconds; "
        "untagged lines: all operations, Tag=<op>: one operation]"
    )
    writer.output_comment(f"[StartTime: {epoch:.3f} (seconds since epoch), {started.isoformat()}]")
    writer.output_base_time(epoch * 1000.0)
    writer.output_legend()
    ops = operations(snapshot)
    lines = 0
    for item in intervals(snapshot, _phase(phase)):
        for op in [TOTAL, *ops]:
            hist = decode(item.ops.get(op, {}).get("hist", ""))
            hist.set_start_time_stamp(item.start * 1000.0)
            hist.set_end_time_stamp(item.end * 1000.0)
            if op != TOTAL:
                out.write(f"Tag={tag_of(op)},")
            writer.output_interval_histogram(
                hist, item.start, item.end, max_value_unit_ratio=1000.0
            )
            lines += 1
    return lines


def _errors(by_class: dict[str, int]) -> str:
    return ";".join(f"{name}={count}" for name, count in sorted(by_class.items()))


def write_csv(snapshot: dict[str, Any], out: TextIO, phase: str = "sustain") -> int:
    """Write the interval series of ``phase`` as CSV; return the number of data rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    ops = operations(snapshot)
    rows = 0
    for item in intervals(snapshot, _phase(phase)):
        for op in [*ops, TOTAL]:
            figures = item.ops.get(op)
            if figures is None:
                continue
            latency = figures.get("latency_us", {})
            writer.writerow(
                [
                    item.phase,
                    item.index,
                    round(item.start, 6),
                    round(item.end, 6),
                    round(item.duration, 6),
                    op,
                    figures["ok"],
                    figures["errors"],
                    figures["error_rate"],
                    figures["throughput"],
                    figures.get("bytes_in", 0),
                    figures.get("late", 0),
                    figures.get("out_of_range", 0),
                    *(latency.get(name, "") for name in _LATENCY_COLUMNS),
                    _errors(figures.get("errors_by_class", {})),
                ]
            )
            rows += 1
    return rows


def write_json(snapshot: dict[str, Any], out: TextIO) -> None:
    """Write the whole snapshot as indented JSON."""
    json.dump(snapshot, out, indent=2)
    out.write("\n")


def export(snapshot: dict[str, Any], fmt: str, out: TextIO, phase: str = "sustain") -> None:
    """Write ``snapshot`` to ``out`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "hlog":
        write_hlog(snapshot, out, phase)
    elif fmt == "csv":
        write_csv(snapshot, out, phase)
    elif fmt == "json":
        write_json(snapshot, out)
    else:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
