"""Small derived figures of an op's summary, shared by the report's readers (monitor, pages).

Pure functions over the figures the engine already puts in each interval and
phase summary (``errors_by_class``, ``error_codes``, ``counters``, ``late``,
``ok``/``errors``): nothing here is measured again, it is only regrouped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protobench.engine.report_model import Report
from protobench.vocab.counters import (
    CONNECTION_SAMPLES,
    DOWN_US,
    STREAM_SAMPLES,
    streams_per_connection,
)


@dataclass(frozen=True)
class ErrorShare:
    """One error class of an op, its count, its share of the op's errors and its codes."""

    cls: str
    count: int
    share: float
    codes: tuple[tuple[str, int], ...]


def error_shares(
    errors_by_class: Mapping[str, int], error_codes: Mapping[str, int]
) -> list[ErrorShare]:
    """Each class (most frequent first) with its own share of the op's errors and its codes.

    ``error_codes`` keys are ``class:code`` as the recorder counts them; a
    class's codes are listed most frequent first.
    """
    out = []
    total = sum(errors_by_class.values())
    for cls, count in sorted(errors_by_class.items(), key=lambda kv: (-kv[1], kv[0])):
        prefix = f"{cls}:"
        codes = sorted(
            (
                (key.removeprefix(prefix), n)
                for key, n in error_codes.items()
                if key.startswith(prefix)
            ),
            key=lambda kv: (-kv[1], kv[0]),
        )
        out.append(ErrorShare(cls, count, count / total, tuple(codes)))
    return out


def error_keys(
    errors_by_class: Mapping[str, int], error_codes: Mapping[str, int]
) -> dict[str, int]:
    """Errors by what tells them apart: ``class:code`` where the error had a code, the bare
    class for those that had none (a timeout, a refused connection); they add up to the
    op's errors."""
    out = dict(error_codes)
    for cls, count in errors_by_class.items():
        coded = sum(n for key, n in error_codes.items() if key.startswith(f"{cls}:"))
        if count > coded:
            out[cls] = out.get(cls, 0) + count - coded
    return out


BYTES = {"bytes_in": "in/s", "bytes_out": "out/s", "bytes_sent": "out/s"}
"""Byte figures shown as rates over the phase (``in/s``, ``out/s``); ``bytes_sent`` is
the counter a WebSocket ``send`` op kept before ``bytes_out`` (older snapshots)."""


def counter_figures(
    counters: Mapping[str, int],
    late: int,
    bytes_in: int = 0,
    seconds: float = 0.0,
    bytes_out: int = 0,
) -> dict[str, float]:
    """An op's protocol counters for display over ``seconds`` of a phase.

    ``down_us`` becomes ``down_s``; ``late`` is added when any; bytes in and
    out become per-second rates ``in/s`` and ``out/s`` when ``seconds`` is known;
    HTTP/2's stream samples become ``streams/conn``, the streams in flight per
    connection.
    """
    out: dict[str, float] = {}
    figures = {**counters, "bytes_in": bytes_in, "bytes_out": bytes_out}
    for name, value in sorted(figures.items()):
        if name == DOWN_US:
            out["down_s"] = round(value / 1e6, 3)
        elif name == STREAM_SAMPLES:
            continue
        elif name == CONNECTION_SAMPLES:
            streams = streams_per_connection(counters)
            if streams is not None:
                out["streams/conn"] = streams
        elif name in BYTES:
            if value and seconds > 0:
                out[BYTES[name]] = round(value / seconds, 1)
        else:
            out[name] = value
    if late:
        out["late"] = late
    return out


def rate_changes(report: Report) -> list[tuple[float, float]]:
    """The open model's live rate changes (``+``/``-`` in the monitor): ``(run seconds,
    factor of the base rate)`` of each, in order, from the report's ``rate`` notices."""
    return [
        (notice.elapsed, float(factor))
        for notice in report.notices
        if notice.kind == "rate" and isinstance(factor := notice.details.get("factor"), int | float)
    ]


def run_seconds(report: Report) -> float:
    """How long the run really went (its last phase's ``end_s``), stopped early or not."""
    return max((p.end_s or 0.0 for p in report.phases.values()), default=0.0)


def fds_nearest_limit(processes: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """``(fds, fd_limit)`` of the sampled process closest to its open-file limit, if known."""
    known = [
        (int(p["fds"]), int(p["fd_limit"]))
        for p in processes
        if p.get("fds") is not None and p.get("fd_limit")
    ]
    return max(known, key=lambda pair: pair[0] / pair[1], default=None)
