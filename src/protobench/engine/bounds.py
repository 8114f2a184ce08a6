"""The generator-bound verdict's bounds, and the running tallies it is judged on.

A run is generator-bound when the workers' event loops lagged
:data:`LAG_BOUND_MS` or more in at least :data:`LAG_BOUND_SHARE` of the sustain
intervals, or a worker process used :data:`CPU_BOUND_PERCENT` or more of a core
in at least :data:`CPU_BOUND_SHARE` of the sustain resource samples, or, in the
open model, the arrival driver took up at least :data:`BEHIND_BOUND_SHARE` of
the arrivals (and :data:`BEHIND_BOUND_MIN` at least) more than :data:`BEHIND_NS`
after their intended time (counter ``behind``, :mod:`protobench.vocab.counters`).
In the open model a busy worker counts only when more than
:data:`LATE_BOUND_SHARE` of the arrivals found no free session (``late``): a
worker keeping a high rate on time can show a full core. :data:`BEHIND_NS` counts
beyond the run's pacing precision (a batch's own wait is not the generator
falling behind).

A run is host-saturated when the host's CPU was at least
:data:`HOST_BUSY_PERCENT` busy while processes other than ours (the workers,
and the watched target, which is what is measured) used at least
:data:`HOST_OTHERS_PERCENT` of it, in at least :data:`HOST_SATURATED_SHARE` of
the sustain samples: the figures then describe a starved run, whichever side
was starved, and the lateness or lag it shows is the host's, not the
generator's.

The lag and CPU bounds are judged on :class:`Tally` counts kept as samples and
intervals arrive, so the verdict is exact and costs constant memory however
long the run, even after the series kept for the snapshot have been coarsened.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CPU_BOUND_PERCENT = 90.0
CPU_BOUND_SHARE = 0.3
LAG_BOUND_MS = 50.0
LAG_BOUND_SHARE = 0.1
BEHIND_NS = 1_000_000
READ_BOUND_NS = 2_000_000
"""The open model reads replies lazily (at its wake-ups to send, not when they arrive) while
those wake-ups are at most this far apart: a reply waits unread this long at most (its time
is the kernel's receive stamp, taken on arrival)."""
BEHIND_BOUND_SHARE = 0.1
"""A few percent of arrivals a millisecond late are a busy host's scheduling (a 200/s run
on two shared cores saw 3%); a generator short of CPU falls behind by far more."""
BEHIND_BOUND_MIN = 10
"""Fewer late arrivals than this never make a run generator-bound (one GC pause in a short run)."""
LATE_BOUND_SHARE = 0.01
HOST_BUSY_PERCENT = 90.0
"""Host CPU (% of all its cores) from which a sample counts as a busy host."""
HOST_OTHERS_PERCENT = 25.0
"""Share of the host's CPU (%) that processes other than ours must use for it to be theirs."""
HOST_SATURATED_SHARE = 0.3


@dataclass
class Tally:
    """How many samples (or intervals) were seen, and how many crossed a bound."""

    total: int = 0
    over: int = 0

    def add(self, over: bool) -> None:
        self.total += 1
        self.over += over

    @property
    def share(self) -> float:
        return self.over / self.total if self.total else 0.0


def busy(workers: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any worker of one resource sample used a core to the bound."""
    return any(float(w.get("cpu", 0.0)) >= CPU_BOUND_PERCENT for w in workers)


def lagging(lag_ms: float) -> bool:
    """Whether one interval's event-loop lag reached the bound."""
    return lag_ms >= LAG_BOUND_MS


def cpu_shares(sample: Mapping[str, Any]) -> tuple[float, float, float, float]:
    """(host, workers, target, others) CPU of one resource sample, in % of the host's cores."""
    host = sample["host"]
    cpus = max(int(host.get("cpus", 1)), 1)
    workers = sum(float(w.get("cpu", 0.0)) for w in sample["workers"]) / cpus
    target = float((sample.get("target") or {}).get("cpu", 0.0)) / cpus
    total = float(host.get("cpu", 0.0))
    return total, workers, target, max(0.0, total - workers - target)


def host_saturated(sample: Mapping[str, Any]) -> bool:
    """Whether the host was busy in one resource sample, and not because of our processes."""
    total, _, _, others = cpu_shares(sample)
    return total >= HOST_BUSY_PERCENT and others >= HOST_OTHERS_PERCENT
