"""Snapshots built in memory for the diff, export and sweep tests.

The interval series and phase histograms come from the engine's own
:class:`~protobench.engine.aggregate.Aggregator` fed with worker frames of
known latencies, so they have exactly the shape a real run writes. Building
one takes a second or two (the engine's summaries walk every histogram bucket),
so :func:`make_snapshot` caches them and hands out deep copies.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from dataclasses import dataclass
from typing import Any

from protobench.engine.aggregate import Aggregator
from protobench.engine.metrics import OpRecorder
from protobench.engine.report_model import to_plain
from protobench.snapshots.model import Snapshot, load_snapshot
from protobench.vocab.errors import ErrorClass, OpError


@dataclass(frozen=True)
class OpSpec:
    """One operation of a synthetic run: ops per second, median latency (µs), error share."""

    rate: float = 2000.0
    median_us: float = 1000.0
    sigma: float = 0.3
    error_rate: float = 0.0
    kind: str = "round_trip"
    """What its latency measures (``latency_kinds``)."""


def make_snapshot(ops: dict[str, OpSpec] | None = None, **options: Any) -> dict[str, Any]:
    """A snapshot dict as :meth:`SnapshotStore.save` writes it, from known distributions.

    ``options`` are :func:`_build`'s keyword arguments; ``overrides`` is a dict.
    """
    items = tuple((ops or {"get": OpSpec()}).items())
    overrides = options.pop("overrides", None) or {}
    key = (items, tuple(sorted(options.items())), json.dumps(overrides, sort_keys=True))
    return copy.deepcopy(_cached(key))


def typed(data: dict[str, Any]) -> Snapshot:
    """``data`` (a snapshot's JSON) read back typed, as the store reads a file."""
    return load_snapshot(json.loads(json.dumps(data)))


def typed_snapshot(ops: dict[str, OpSpec] | None = None, **options: Any) -> Snapshot:
    """:func:`make_snapshot` read back typed."""
    return typed(make_snapshot(ops, **options))


@functools.cache
def _cached(key: tuple[Any, ...]) -> dict[str, Any]:
    items, options, overrides = key
    return _build(dict(items), overrides=json.loads(overrides), **dict(options))


def _build(
    ops: dict[str, OpSpec],
    *,
    seed: int = 1,
    intervals: int = 12,
    interval: float = 0.25,
    warmup_intervals: int = 2,
    run_id: str = "20250101-000000-synthetic-0000",
    host: str = "bench-host",
    cpu_model: str = "Test CPU",
    profile_sha256: str = "a" * 64,
    overrides: dict[str, Any] | None = None,
    tool_version: str = "0.1.0",
    partial: bool = False,
    generator_bound: bool = False,
    last_interval_fraction: float = 1.0,
    open_model: bool = False,
) -> dict[str, Any]:
    """``open_model``: each latency also recorded as uncorrected, at 60% of its value."""
    rng = random.Random(seed)
    names = list(ops)
    aggregator = Aggregator(
        names,
        corrected=open_model,
        phase_offsets={"warmup": 0.0},
        kinds={name: spec.kind for name, spec in ops.items()},
    )
    aggregator.phase_offsets["sustain"] = warmup_intervals * interval
    aggregator.live = {0}
    for phase, count in (("warmup", warmup_intervals), ("sustain", intervals)):
        for index in range(count):
            length = interval
            if phase == "sustain" and index == count - 1:
                length = interval * last_interval_fraction
            frame: dict[str, Any] = {
                "phase": phase,
                "index": index,
                "t0": index * interval,
                "t1": index * interval + length,
                "worker": 0,
                "ops": {},
            }
            for name, spec in ops.items():
                recorder = OpRecorder(name)
                attempts = max(1, round(rng.gauss(spec.rate * length, (spec.rate * length) ** 0.5)))
                for _ in range(attempts):
                    if rng.random() < spec.error_rate:
                        recorder.error(OpError(ErrorClass.TIMEOUT, "slow"))
                    else:
                        latency_us = spec.median_us * rng.lognormvariate(0.0, spec.sigma)
                        recorder.latencies.append(int(latency_us * 1000))
                        if open_model:
                            recorder.uncorrected.append(int(latency_us * 600))
                frame["ops"][name] = recorder.flush().to_wire()
            aggregator.add(frame)
    aggregator.finish()
    sustain = aggregator.phase_report("sustain")
    phases: dict[str, Any] = {"sustain": to_plain(sustain)} if sustain else {}
    warmup = aggregator.phase_report("warmup")
    if warmup:
        phases["warmup"] = to_plain(warmup)
    report = {
        "schema": "protobench.report/1",
        "tool": {"name": "protobench", "version": tool_version},
        "profile": "synthetic",
        "protocol": "http",
        "target": "http://127.0.0.1:8080/",
        "target_kind": "embedded",
        "model": {"type": "open", "rate": 2000.0, "sessions": 4}
        if open_model
        else {"type": "closed", "sessions": 4},
        "processes": 1,
        "started_at": "2025-01-01T00:00:00+00:00",
        "partial": partial,
        "stop_reason": "interrupted" if partial else "completed",
        "phases": phases,
        "resources": {
            "generator": {"worker_cpu_peak": 50.0, "worker_cpu_mean": 40.0, "rss_peak": 1},
            "target": {"cpu_peak": 30.0, "cpu_mean": 20.0},
            "host": {},
        },
        "thresholds": [],
        "verdicts": {
            "generator_bound": generator_bound,
            "reason": "a worker used 100% of a core" if generator_bound else None,
        },
        "notices": [],
    }
    return {
        "schema": "protobench.snapshot/1",
        "id": run_id,
        "created_at": "2025-01-01T00:00:00+00:00",
        "partial": partial,
        "labels": {},
        "provenance": {
            "tool_version": tool_version,
            "profile": "synthetic",
            "profile_sha256": profile_sha256,
            "overrides": overrides or {},
            "host": host,
            "cpu_model": cpu_model,
            "cpu_count": 2,
            "python": "3.13.0",
        },
        "plan": {
            "profile": "synthetic",
            "interval": interval,
            "groups": [{"name": name, "op": name, "count": 1} for name in names],
        },
        "report": report,
        "series": json.loads(json.dumps(to_plain(aggregator.series))),  # as the store writes it
        "histograms": aggregator.phase_histograms(),
        "resources": [
            {
                "elapsed": record.elapsed + 0.01,  # sampled on its own clock, a bit later
                "phase": record.phase,
                "workers": [{"pid": 100, "cpu": 30.0 + number, "rss": 1 << 20, "threads": 2}],
                "target": {"pid": 200, "cpu": 20.0, "rss": 5 << 20, "threads": 4},
                "host": {"cpu": 60.0, "cpus": 2, "mem_used": 1 << 30, "mem_total": 4 << 30},
            }
            for number, record in enumerate(aggregator.series)
        ],
    }
