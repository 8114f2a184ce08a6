"""A run's resource samples: exact running figures per phase, and a bounded series.

The controller samples the workers, the target process and the host once per
interval. Every sample updates the running :class:`ResourceFigures` of its
phase and of the whole run (peaks, sums for means, and the :class:`Tally` of
samples in which a worker used a core to the generator-bound limit); the
report's ``resources`` section and the generator-bound verdict are computed
from those, so they are exact however long the run.

The series a snapshot keeps (for graphs and replays) is bounded like the
interval series: about :data:`SERIES_LIMIT` samples per phase (the newest one
waits for a twin of its span, so one more at times); past that the
oldest adjacent pair of the finest samples becomes one sample covering both
(``span`` counts the samples it stands for): CPU figures become their
span-weighted mean, which is the CPU used over the combined stretch, and RSS,
threads, fds and host memory their peak. Like a sample, a merged one lists
the processes alive at its end (matched by node and pid with the earlier one).

A worker of a Ray pool carries its ``node``; one on another machine is also
``off_host``. Every worker counts for the generator-bound tally and the worker
figures; only those of this host count in its CPU shares (another machine's
CPU is not part of this host's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import NotRequired, TypedDict

from protobench.engine.bounds import Tally, busy, cpu_shares, host_saturated
from protobench.engine.events import HostSample, ProcessSample
from protobench.engine.thinning import SERIES_LIMIT, pair_to_merge

ALL = "all"
"""The key of the figures of the whole run (every phase)."""


class ResourceRecord(TypedDict):
    """One sample of the series (a snapshot's ``resources``): the workers, target and host.

    A merged one covers ``span`` samples (absent: one). A process's ``fds``,
    ``fd_limit``, ``node`` and ``off_host`` are optional
    (:class:`~protobench.engine.events.ProcessSample`): older snapshots lack them.
    """

    elapsed: float
    phase: str
    span: NotRequired[int]
    workers: list[ProcessSample]
    target: ProcessSample | None
    host: HostSample


@dataclass
class ResourceFigures:
    """Running figures of the samples of one phase (or of the whole run).

    CPU sums are exact (fractions of the samples' floats), so a mean does not
    depend on the order or the number of samples added, however long the run.
    """

    samples: int = 0
    busy: Tally = field(default_factory=Tally)
    host_busy: Tally = field(default_factory=Tally)
    """Samples in which the host was busy with processes other than ours."""
    host_cpu_sum: Fraction = Fraction(0)
    workers_share_sum: Fraction = Fraction(0)
    target_share_sum: Fraction = Fraction(0)
    others_share_sum: Fraction = Fraction(0)
    worker_cpu_sum: Fraction = Fraction(0)
    worker_cpu_count: int = 0
    worker_cpu_peak: float | None = None
    worker_rss_peak: int | None = None
    target_pid: int | None = None
    target_samples: int = 0
    target_cpu_sum: Fraction = Fraction(0)
    target_cpu_peak: float | None = None
    target_rss_peak: int | None = None
    target_fds_peak: int | None = None
    target_threads_peak: int | None = None
    host_cpu_peak: float | None = None
    host_cpus: int | None = None
    host_mem_used_peak: int | None = None

    def add(self, sample: ResourceRecord) -> None:
        workers = sample["workers"]
        self.samples += 1
        self.busy.add(busy(workers))
        here = on_this_host(sample)
        self.host_busy.add(host_saturated(here))
        total, ours, target_share, others = cpu_shares(here)
        self.host_cpu_sum += Fraction(total)
        self.workers_share_sum += Fraction(ours)
        self.target_share_sum += Fraction(target_share)
        self.others_share_sum += Fraction(others)
        for worker in workers:
            self.worker_cpu_sum += Fraction(worker["cpu"])
            self.worker_cpu_count += 1
            self.worker_cpu_peak = peak(self.worker_cpu_peak, worker["cpu"])
        self.worker_rss_peak = peak(self.worker_rss_peak, sum(w["rss"] for w in workers))
        target = sample.get("target")
        if target:
            self.target_pid = target["pid"]
            self.target_samples += 1
            self.target_cpu_sum += Fraction(target["cpu"])
            self.target_cpu_peak = peak(self.target_cpu_peak, target["cpu"])
            self.target_rss_peak = peak(self.target_rss_peak, target["rss"])
            self.target_fds_peak = peak(self.target_fds_peak, target.get("fds", 0))
            self.target_threads_peak = peak(self.target_threads_peak, target.get("threads", 0))
        host = sample["host"]
        self.host_cpu_peak = peak(self.host_cpu_peak, host["cpu"])
        self.host_cpus = host["cpus"]
        self.host_mem_used_peak = peak(self.host_mem_used_peak, host["mem_used"])

    @property
    def worker_cpu_mean(self) -> float | None:
        if not self.worker_cpu_count:
            return None
        return round(float(self.worker_cpu_sum / self.worker_cpu_count), 1)

    def host_shares(self) -> dict[str, float | None]:
        """Mean CPU over the samples, in % of the host's cores: all, our workers, target, others."""
        sums = {
            "cpu_mean": self.host_cpu_sum,
            "workers_share_mean": self.workers_share_sum,
            "target_share_mean": self.target_share_sum,
            "others_share_mean": self.others_share_sum,
        }
        return {
            key: round(float(value / self.samples), 1) if self.samples else None
            for key, value in sums.items()
        }

    @property
    def target_cpu_mean(self) -> float | None:
        if not self.target_samples:
            return None
        return round(float(self.target_cpu_sum / self.target_samples), 1)


def peak[T: (int, float)](current: T | None, value: T) -> T:
    """The larger of a running peak (``None``: no value yet) and ``value``."""
    return value if current is None or value > current else current


class ResourceLog:
    """The run's resource samples: running figures and the bounded series."""

    def __init__(self, limit: int = SERIES_LIMIT) -> None:
        self.limit = limit
        self.series: list[ResourceRecord] = []
        self._spans: list[int] = []
        self.figures: dict[str, ResourceFigures] = {}

    def add(self, sample: ResourceRecord) -> None:
        """Take one sample (``elapsed``, ``phase``, ``workers``, ``target``, ``host``)."""
        phase = sample["phase"]
        for key in (phase, ALL):
            self.figures.setdefault(key, ResourceFigures()).add(sample)
        self.series.append(sample)
        self._spans.append(1)
        at = pair_to_merge([s["phase"] for s in self.series], self._spans, phase, self.limit)
        if at is not None:
            first, second = self._spans[at], self._spans[at + 1]
            merged = merge_samples(self.series[at], self.series[at + 1], first, second)
            self.series[at : at + 2] = [merged]
            self._spans[at : at + 2] = [first + second]

    @property
    def whole(self) -> ResourceFigures:
        """The figures of the whole run (every phase)."""
        return self.figures.get(ALL, ResourceFigures())

    def phase(self, phase: str) -> ResourceFigures:
        """The figures of ``phase``, or of the whole run when it had no sample."""
        return self.figures.get(phase) or self.whole


def on_this_host(sample: ResourceRecord) -> ResourceRecord:
    """``sample`` without the workers that run on another machine (``off_host``)."""
    workers = sample["workers"]
    if not any(w.get("off_host") for w in workers):
        return sample
    return {**sample, "workers": [w for w in workers if not w.get("off_host")]}


def _process_key(process: ProcessSample) -> tuple[str | None, int]:
    return process.get("node"), process["pid"]


def merge_samples(
    first: ResourceRecord, second: ResourceRecord, first_span: int, second_span: int
) -> ResourceRecord:
    """One sample standing for two adjacent ones covering ``first_span`` + ``second_span``."""
    earlier = {_process_key(w): w for w in first["workers"]}
    workers = [
        _merge_process(earlier[key], w, first_span, second_span)
        if (key := _process_key(w)) in earlier
        else w
        for w in second["workers"]
    ]
    target, before = second.get("target"), first.get("target")
    if before and target and before["pid"] == target["pid"]:
        target = _merge_process(before, target, first_span, second_span)
    host = second["host"].copy()
    host["cpu"] = _mean(first["host"]["cpu"], host["cpu"], first_span, second_span)
    host["mem_used"] = max(first["host"]["mem_used"], host["mem_used"])
    return {
        "elapsed": second["elapsed"],
        "phase": second["phase"],
        "span": first_span + second_span,
        "workers": workers,
        "target": target,
        "host": host,
    }


def _merge_process(
    first: ProcessSample, second: ProcessSample, first_span: int, second_span: int
) -> ProcessSample:
    merged = second.copy()
    merged["cpu"] = _mean(first["cpu"], second["cpu"], first_span, second_span)
    merged["rss"] = max(first["rss"], second["rss"])
    merged["threads"] = max(first["threads"], second["threads"])
    if "fds" in first or "fds" in second:
        merged["fds"] = max(first.get("fds", 0), second.get("fds", 0))
    return merged


def _mean(first: float, second: float, first_span: int, second_span: int) -> float:
    return round((first * first_span + second * second_span) / (first_span + second_span), 1)
