"""Sweeps: one run of a profile per level of one or more axes, the knee, early stops.

An axis is ``KEY=LEVEL,LEVEL,...`` where KEY is a run setting that ``--vary``
takes (:data:`~protobench.profiles.settings.VARY_KEYS`: ``duration``,
``connections``, ``rate``...), a protocol option (``options.KEY``) or an
embedded-target option (``serve.KEY``). With several axes every
combination runs; the **first** axis is the load axis: runs go through its
levels in the order given, once for each combination of the other axes (a
*series*).

The **knee** of a series is the last level before throughput stops rising
while latency climbs: the first step where throughput grows by less than half
as much as the load (:data:`KNEE_MIN_EFFICIENCY`; by less than 10%,
:data:`KNEE_MIN_GAIN`, when the levels are not increasing numbers) while p50
grows by more than 20% (:data:`KNEE_MIN_RISE`) marks the level before it. In a
geometric series (each level at least :data:`GEOMETRIC_STEP` times the one
before) a flat first step does not make the lowest level the knee: the knee
lies somewhere at or below it, which the result says as a note.

The figures judged are those of one scope of each run (:func:`judged_scope`):
the run's total when its ops measure one kind of latency, else the op whose
latency means the most (an end-to-end ``one_way`` before a ``round_trip``
before a ``to_ack``; never a ``local_write``), or the group named by ``op``.
Levels where the host was saturated by other load are marked: their figures
are the host's as much as the target's.

A series **stops early** when a stop condition (a threshold expression such
as ``error_rate > 5%``; true means stop) holds for a run: its higher levels
are skipped. An interrupted run ends the sweep.

The engine knows nothing of how a level is run: :meth:`Sweep.run` calls a
runner with the level (its values by key) and its labels and reads the report
the runner returns.
"""

from __future__ import annotations

import datetime as dt
import itertools
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from protobench.engine.report_model import Report
from protobench.engine.summaries import MIXED, OpSummary
from protobench.engine.thresholds import judge
from protobench.profiles.settings import BY_NAME, VARY_KEYS, Overrides
from protobench.vocab.thresholds import Threshold, parse_threshold
from protobench.vocab.units import parse_scalar

KNEE_MIN_EFFICIENCY = 0.5
KNEE_MIN_GAIN = 0.10
KNEE_MIN_RISE = 0.20
GEOMETRIC_STEP = 1.5
DEFAULT_STOP = "error_rate > 5%"
KIND_RANK = ("one_way", "round_trip", "to_ack")
"""Latency kinds by how much they say of the target, best first (``local_write``: nothing)."""


@dataclass(frozen=True)
class Axis:
    """One ``--vary``: a key and its levels, parsed."""

    key: str
    levels: tuple[Any, ...]
    texts: tuple[str, ...]


def parse_axis(text: str) -> Axis:
    """Parse ``KEY=L1,L2,...``; ``ValueError`` says what was expected."""
    key, eq, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    texts = tuple(t.strip() for t in raw.split(","))
    if not eq or not key or not all(texts):
        raise ValueError(f"expected KEY=LEVEL,LEVEL,... such as connections=1,2,4, got {text!r}")
    name, _, part = key.partition(".")
    if (f"{name}.KEY" if part else key) not in VARY_KEYS:
        raise ValueError(f"cannot vary {key!r} (expected one of {', '.join(VARY_KEYS)})")
    parser: Callable[[str], Any] = parse_scalar if part else BY_NAME[key].kind.parse
    levels = []
    for item in texts:
        try:
            levels.append(parser(item))
        except ValueError as exc:
            raise ValueError(f"{key}={item}: {exc}") from None
    return Axis(key, tuple(levels), texts)


def apply_level(base: Overrides, assignment: dict[str, Any]) -> Overrides:
    """``base`` with the assignment's values set (``options.KEY``: one key of options)."""
    changes: dict[str, Any] = {}
    for key, value in assignment.items():
        name, dot, part = key.partition(".")
        if dot:
            changes[name] = {**changes.get(name, base.get(name, {})), part: value}
        else:
            changes[key] = value
    return base.with_values(**changes)


def grid(axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """Every combination of levels, the first axis varying fastest."""
    if not axes:
        return []
    load, others = axes[0], axes[1:]
    combos = itertools.product(*(axis.levels for axis in others))
    return [
        {load.key: level, **dict(zip((a.key for a in others), combo, strict=True))}
        for combo in combos
        for level in load.levels
    ]


def new_group_id() -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"sweep-{stamp}-{secrets.token_hex(2)}"


def judged_scope(report: Report, op: str | None = None) -> tuple[str | None, OpSummary | None]:
    """(group name or ``None`` for the total, its sustain figures) that a sweep judges.

    ``op`` names a group; else the total when it has a latency (its ops measure
    one kind), else the group whose kind ranks first in :data:`KIND_RANK` (the
    busiest of them).
    """
    sustain = report.sustain
    if sustain is None:
        return op, None
    if op is not None:
        return op, sustain.ops.get(op)
    if sustain.total.latency_kind != MIXED:
        return None, sustain.total
    ranked = [
        (KIND_RANK.index(summary.latency_kind), -summary.ok, name)
        for name, summary in sustain.ops.items()
        if summary.latency_kind in KIND_RANK and summary.latency_us.count
    ]
    if not ranked:
        return None, sustain.total
    name = min(ranked)[2]
    return name, sustain.ops[name]


@dataclass(frozen=True)
class Point:
    """One run of a sweep, summarised from its report: throughput and latency of the scope
    judged (``op``: a group, ``None``: the total)."""

    assignment: dict[str, Any]
    throughput: float | None
    p50: float | None
    p99: float | None
    error_rate: float | None
    generator_cpu: float | None
    target_cpu: float | None
    generator_bound: bool
    partial: bool
    snapshot: str | None
    op: str | None = None
    latency_kind: str | None = None
    host_saturated: bool = False

    @classmethod
    def from_report(
        cls, assignment: dict[str, Any], report: Report, op: str | None = None
    ) -> Point:
        sustain = report.sustain
        total = sustain.total if sustain is not None else None
        name, scope = judged_scope(report, op)
        target = report.resources.target
        worker_mean = report.resources.generator.worker_cpu_mean
        return cls(
            assignment=dict(assignment),
            throughput=scope.throughput if scope is not None else None,
            p50=scope.latency_us.value("p50") if scope is not None else None,
            p99=scope.latency_us.value("p99") if scope is not None else None,
            error_rate=total.error_rate if total is not None else None,
            generator_cpu=(
                round(worker_mean * report.processes, 1) if worker_mean is not None else None
            ),
            target_cpu=target.cpu_mean if target is not None else None,
            generator_bound=report.verdicts.generator_bound,
            partial=report.partial,
            snapshot=report.snapshot,
            op=name,
            latency_kind=scope.latency_kind if scope is not None else None,
            host_saturated=report.verdicts.host_saturated,
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def _load_step(before: Any, after: Any) -> float | None:
    """The relative increase of a numeric load level, or ``None``."""
    if isinstance(before, bool) or not isinstance(before, int | float):
        return None
    if isinstance(after, bool) or not isinstance(after, int | float) or not 0 < before < after:
        return None
    return float(after) / float(before) - 1.0


def geometric(points: Sequence[Point], load: str | None) -> bool:
    """Whether the levels grow by at least :data:`GEOMETRIC_STEP` times at every step."""
    if load is None or len(points) < 2:
        return False
    for before, after in itertools.pairwise(points):
        step = _load_step(before.assignment.get(load), after.assignment.get(load))
        if step is None or step + 1.0 < GEOMETRIC_STEP:
            return False
    return True


def find_knee(points: Sequence[Point], load: str | None = None) -> int | None:
    """Index of the knee of a series in load order, or ``None`` if throughput never flattens
    (or, in a geometric series, flattens from the first step: see :func:`knee_below`).

    ``load`` is the load axis's key in each point's assignment.
    """
    index = _first_flat_step(points, load)
    if index == 0 and geometric(points, load):
        return None
    return index


def knee_below(points: Sequence[Point], load: str | None = None) -> bool:
    """A geometric series flat from its first step: the knee is at or below its lowest level."""
    return geometric(points, load) and _first_flat_step(points, load) == 0


def _first_flat_step(points: Sequence[Point], load: str | None) -> int | None:
    for index in range(1, len(points)):
        before, after = points[index - 1], points[index]
        if not (before.throughput and after.throughput and before.p50 and after.p50):
            continue
        gain = after.throughput / before.throughput - 1.0
        rise = after.p50 / before.p50 - 1.0
        step = _load_step(before.assignment.get(load), after.assignment.get(load)) if load else None
        flat = gain < KNEE_MIN_EFFICIENCY * step if step is not None else gain < KNEE_MIN_GAIN
        if flat and rise > KNEE_MIN_RISE:
            return index - 1
    return None


@dataclass
class SweepResult:
    """What a sweep did: its points in run order, knees, stops and skipped levels."""

    group: str
    axes: list[Axis]
    points: list[Point] = field(default_factory=list)
    knees: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the knee search found besides knees (a knee at or below the lowest level)."""
    stops: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.group,
            "axes": [{"key": a.key, "levels": list(a.levels)} for a in self.axes],
            "points": [{**p.to_dict(), "knee": i in self.knees} for i, p in enumerate(self.points)],
            "knees": [self.points[i].assignment for i in self.knees],
            "notes": self.notes,
            "stops": self.stops,
            "skipped": self.skipped,
            "interrupted": self.interrupted,
        }


Runner = Callable[[dict[str, Any], dict[str, Any]], Report]


class Sweep:
    """Runs the levels of ``axes`` in order, with stop conditions (threshold expressions)."""

    def __init__(
        self,
        axes: Sequence[Axis],
        stop_on: Sequence[str] = (DEFAULT_STOP,),
        group: str = "",
        op: str | None = None,
    ) -> None:
        if not axes:
            raise ValueError("a sweep needs at least one axis")
        keys = [axis.key for axis in axes]
        if len(set(keys)) != len(keys):
            raise ValueError("each axis may be given once")
        self.axes = list(axes)
        self.stop_on: list[Threshold] = [parse_threshold(expr) for expr in stop_on]
        self.group = group or new_group_id()
        self.op = op
        """The group whose figures are judged (``None``: :func:`judged_scope` chooses)."""

    def levels(self) -> list[dict[str, Any]]:
        return grid(self.axes)

    def labels(self, assignment: dict[str, Any]) -> dict[str, Any]:
        load = self.axes[0].key
        return {"sweep": self.group, "axis": load, "level": assignment[load], "levels": assignment}

    def run(self, runner: Runner, on_point: Callable[[Point], None] | None = None) -> SweepResult:
        """Run every level through ``runner(assignment, labels) -> report``."""
        result = SweepResult(self.group, self.axes)
        levels = self.levels()
        size = len(self.axes[0].levels)
        for start in range(0, len(levels), size):
            series: list[int] = []
            stopped = False
            for assignment in levels[start : start + size]:
                if result.interrupted or stopped:
                    result.skipped.append(assignment)
                    continue
                report = runner(assignment, self.labels(assignment))
                point = Point.from_report(assignment, report, self.op)
                result.points.append(point)
                series.append(len(result.points) - 1)
                if on_point is not None:
                    on_point(point)
                if report.stop_reason == "interrupted":
                    result.interrupted = True
                    result.stops.append(f"{describe(assignment)}: interrupted")
                    continue
                reason = self._stop_reason(report)
                if reason is not None:
                    result.stops.append(f"{describe(assignment)}: {reason}")
                    stopped = True
            points = [result.points[i] for i in series]
            knee = find_knee(points, self.axes[0].key)
            if knee is not None:
                result.knees.append(series[knee])
            elif knee_below(points, self.axes[0].key):
                lowest = describe(points[0].assignment)
                result.notes.append(
                    f"throughput was already flat from {lowest} on while latency climbed: "
                    f"the knee is at or below {lowest} (sweep lower levels to find it)"
                )
        return result

    def _stop_reason(self, report: Report) -> str | None:
        if report.sustain is None:
            return f"no sustain phase was measured ({report.stop_reason})"
        for threshold in self.stop_on:
            value, holds = judge(threshold, report.sustain, report.phases.get("drain"))
            if holds:
                return f"{threshold.expr} (observed {value:g})"
        return None


def describe(assignment: dict[str, Any]) -> str:
    """``connections=4 processes=2``."""
    return " ".join(f"{k}={v}" for k, v in assignment.items())
