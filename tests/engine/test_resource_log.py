"""A long run's resource series stays bounded; its figures and verdict stay exact."""

from __future__ import annotations

import itertools
import math
from typing import Any

from protobench.engine.bounds import CPU_BOUND_PERCENT
from protobench.engine.resource_log import ALL, ResourceLog, merge_samples

MiB = 1024 * 1024


def _sample(second: int, phase: str = "sustain") -> dict[str, Any]:
    cpu = float(40 + (second * 37) % 60)  # 40..99, a known uneven pattern
    return {
        "elapsed": float(second),
        "phase": phase,
        "workers": [
            {"pid": 100, "cpu": cpu, "rss": (50 + second % 7) * MiB, "threads": 1, "fds": 60},
            {"pid": 101, "cpu": 10.0, "rss": 50 * MiB, "threads": 1, "fds": 60},
        ],
        "target": {"pid": 7, "cpu": 100.0 - cpu, "rss": (30 + second) * MiB, "threads": 4},
        "host": {"cpu": cpu / 2, "cpus": 2, "mem_used": (1000 + second % 5) * MiB, "mem_total": 0},
    }


def _span(sample: dict[str, Any]) -> int:
    return int(sample.get("span", 1))


def test_series_is_bounded_and_figures_stay_exact() -> None:
    log = ResourceLog(limit=8)
    raw = [_sample(second) for second in range(1, 41)]
    for sample in raw:
        log.add(sample)
    series = log.series
    assert len(series) == 8
    assert sum(_span(s) for s in series) == 40
    assert _span(series[-1]) == 1  # the newest sample stays as it came
    assert [s["elapsed"] for s in series] == sorted(s["elapsed"] for s in series)
    assert series[-1]["elapsed"] == 40.0
    worker_cpu = [s["workers"][0]["cpu"] for s in raw]
    # a merged sample's CPU is the CPU over its stretch: the span-weighted mean is the run's mean
    series_mean = sum(s["workers"][0]["cpu"] * _span(s) for s in series) / 40
    assert abs(series_mean - sum(worker_cpu) / 40) < 0.1
    # memory keeps its peak through merges
    assert max(s["target"]["rss"] for s in series) == 70 * MiB
    assert max(s["host"]["mem_used"] for s in series) == 1004 * MiB
    figures = log.figures["sustain"]
    assert figures.samples == 40
    assert figures.busy.total == 40
    assert figures.busy.over == sum(1 for cpu in worker_cpu if cpu >= CPU_BOUND_PERCENT)
    assert figures.worker_cpu_peak == max(worker_cpu)
    assert figures.worker_cpu_mean == round((sum(worker_cpu) + 10.0 * 40) / 80, 1)
    assert figures.worker_rss_peak == max(sum(w["rss"] for w in s["workers"]) for s in raw)
    assert figures.target_rss_peak == 70 * MiB
    assert figures.target_cpu_peak == 100.0 - min(worker_cpu)


def test_phases_are_kept_and_coarsened_apart() -> None:
    log = ResourceLog(limit=4)
    for second in range(1, 11):
        log.add(_sample(second, "warmup"))
    for second in range(11, 31):
        log.add(_sample(second, "sustain"))
    phases = [s["phase"] for s in log.series]
    assert phases == sorted(phases, key=("warmup", "sustain").index)
    # at most one record past the limit: the newest stays as it came until it has a twin
    assert 4 <= phases.count("warmup") <= 5
    assert 4 <= phases.count("sustain") <= 5
    assert sum(_span(s) for s in log.series if s["phase"] == "warmup") == 10
    assert sum(_span(s) for s in log.series if s["phase"] == "sustain") == 20
    assert log.figures["warmup"].samples == 10
    assert log.figures["sustain"].samples == 20
    assert log.figures[ALL].samples == 30
    assert log.phase("drain") is log.figures[ALL]  # no drain sample: the whole run's


def test_a_merged_sample_lists_the_processes_alive_at_its_end() -> None:
    first, second = _sample(1), _sample(2)
    second["workers"] = second["workers"][:1]  # worker 101 died
    second["target"] = None  # and the target with it
    merged = merge_samples(first, second, 3, 1)
    assert [w["pid"] for w in merged["workers"]] == [100]
    cpus = first["workers"][0]["cpu"], second["workers"][0]["cpu"]
    assert merged["workers"][0]["cpu"] == round((cpus[0] * 3 + cpus[1]) / 4, 1)
    assert merged["target"] is None
    assert merged["span"] == 4
    assert merged["elapsed"] == 2.0


def test_cpu_means_are_exact_whatever_the_order() -> None:
    cpus = [0.1, 44.2, 45.0, 30.5]  # a mean on a rounding edge: a running float sum says 30.0
    exact = round(math.fsum(cpus) / len(cpus), 1)
    for order in itertools.permutations(cpus):
        log = ResourceLog()
        for second, cpu in enumerate(order):
            sample = _sample(second)
            sample["workers"] = sample["workers"][:1]
            sample["workers"][0]["cpu"] = cpu
            sample["target"]["cpu"] = cpu
            log.add(sample)
        assert log.whole.worker_cpu_mean == exact
        assert log.whole.target_cpu_mean == exact
