"""Worker STATS payloads of a small run, and the series an aggregator makes of them.

Two workers, two ops (one with errors, counters and open-model latencies),
warmup and sustain, with a series limit low enough that old records merge:
every kind of record the interval series holds. It imports nothing newer
than the plain-dict aggregator, so ``tests/engine/series_golden.json`` was written
from it by the code before the series was typed: the bytes a snapshot holds.
"""

from __future__ import annotations

import json
from typing import Any

from protobench.engine.aggregate import Aggregator
from protobench.engine.metrics import OpRecorder
from protobench.engine.report_model import to_plain
from protobench.vocab.errors import ErrorClass, OpError

NAMES = ["get", "put"]
SERIES_LIMIT = 4


def payload(worker: int, phase: str, index: int) -> dict[str, Any]:
    """One worker's STATS payload (as the worker sends it) of interval ``index``."""
    ops = {}
    for number, name in enumerate(NAMES):
        recorder = OpRecorder(name)
        base = 100 * (number + 1) + 10 * index + worker
        recorder.latencies.extend((base + k) * 1000 for k in range(5 + index))
        recorder.uncorrected.extend((base // 2 + k) * 1000 for k in range(5 + index))
        if name == "put" and index % 2:
            recorder.error(OpError(ErrorClass.TIMEOUT, f"slow {index}"))
            recorder.count("retries", index)
        recorder.add_bytes_in(64 * index)
        ops[name] = recorder.flush().to_wire()
    return {
        "worker": worker,
        "phase": phase,
        "index": index,
        "t0": float(index),
        "t1": float(index + 1),
        "ops": ops,
        "lag_ms": 1.5 * worker + index,
        "inflight": worker + 1,
    }


def aggregated() -> Aggregator:
    """The aggregator after every payload of the run (2 warmup, 9 sustain intervals)."""
    aggregator = Aggregator(
        NAMES, True, {"warmup": 0.0, "sustain": 2.0}, sessions={"get": 2, "put": 1}
    )
    aggregator.live = {0, 1}
    aggregator.series_limit = SERIES_LIMIT
    for phase, count in (("warmup", 2), ("sustain", 9)):
        for index in range(count):
            for worker in (0, 1):
                aggregator.add(payload(worker, phase, index))
    aggregator.finish()
    return aggregator


def series_json() -> str:
    """The series as the snapshot store writes it (``json.dumps``, compact)."""
    return json.dumps(to_plain(aggregated().series), separators=(",", ":"))
