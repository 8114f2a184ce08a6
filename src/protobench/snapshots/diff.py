"""The comparison of two sets of runs (``protobench diff``), as data.

Each side is one or more snapshots. For every operation and the ``TOTAL`` of
all operations, and for each metric (throughput, p50, p90, p95, p99, p99.9,
error rate, and the generator's delay p50 and p99 when a side measured it: the
kernel clock), a side's samples are the metric's values in its **sustain intervals**
(intervals shorter than half the plan's interval are left out; with several
runs the samples of all of them are pooled). A side is summarised by the
median and its 95% confidence interval; the two sides are compared with the
Mann-Whitney U test, and a change is *significant* when p < alpha
(:mod:`protobench.snapshots.stats`). Beside the interval statistics, each row
carries the whole-phase figure of each side: percentiles from the merged
phase histograms, throughput and error rate from the phase counts.

Changes are relative (``+0.12`` is +12%), except for the error rate whose
change is the difference of the two rates (``+0.005`` is +0.5 percentage
points). A geomean row per metric summarises the operations (not for the
error rate, which is often 0).

Gates (``--fail-on``) are ``[OP:]METRIC:+N%`` or ``-N%``: the gate fails when
a significant change goes beyond N% in that direction (``+`` for a rise,
``-`` for a fall) on the ``TOTAL`` row, on operation ``OP``, or on every row
with ``*:``. For ``error_rate`` N is in percentage points. A gate decides only
on evidence: a row is *inconclusive* (neither passes nor fails) when a side
has fewer samples than a confidence interval of its median needs (6 at 95%,
benchstat's "need >= 6 samples") or too few for any change to be significant
at alpha, when the runs are of different protocols, or, for ``TOTAL``, when
the two sides do not run the same operations; a gate on an operation that only
one side ran is inconclusive too. A gate with an inconclusive row and no
crossed row is inconclusive: exit code ``ExitCode.INCONCLUSIVE`` (4) unless the
user accepts inconclusive gates.

A whole-phase percentile is only compared when each side's merged histogram
holds enough samples for that percentile to differ from the maximum (100 for
p99, 1,000 for p99.9): otherwise its change is ``None`` and ``phase_note``
says how many are needed.

Before any figure, :func:`comparability` lists why the runs may not be
comparable: another host, CPU, profile, profile hash, overrides, tool version
or protocol; a generator-bound run; a partial run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from protobench.engine.report_model import Report, to_plain
from protobench.engine.stacks.cost import overhead
from protobench.engine.stacks.model import ShareChange, merged, share_changes
from protobench.snapshots.model import Provenance, Snapshot
from protobench.snapshots.series import (
    LATENCY_PERCENTILES,
    TOTAL,
    Interval,
    intervals,
    latency,
    phase_counts,
    phase_histogram,
)
from protobench.snapshots.stats import (
    CONFIDENCE,
    Estimate,
    estimate,
    geomean,
    mann_whitney_p,
    min_samples_for_ci,
    smallest_p,
)
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.percentiles import PERCENTILE_KEYS, PERCENTILE_LABELS

DELAY_METRICS = {"delay_p50": "p50", "delay_p99": "p99"}
"""The generator's delay (``generator_delay_us``), by the percentile each one is."""
METRICS = ("throughput", *PERCENTILE_KEYS, "error_rate", *DELAY_METRICS)
LATENCY_METRICS = PERCENTILE_KEYS
LABELS = {
    **PERCENTILE_LABELS,
    "error_rate": "error rate",
    "delay_p50": "gen. delay p50",
    "delay_p99": "gen. delay p99",
}
"""How a metric is shown (``p999`` as ``p99.9``); a metric not listed is shown by its name."""
ALIASES = {
    **{label: key for key, label in PERCENTILE_LABELS.items() if label != key},
    "error-rate": "error_rate",
    "errors": "error_rate",
    "rps": "throughput",
    "delay-p50": "delay_p50",
    "delay-p99": "delay_p99",
}
ALPHA = 0.05
MIN_INTERVAL_FRACTION = 0.5
DIFF_SCHEMA = "protobench.diff/1"
type ChangeKind = Literal["relative", "points"]
"""A relative change (``+0.12`` is +12%) or a difference of rates (the error rate)."""
type GateStatus = Literal["passed", "failed", "inconclusive"]
_PERCENTILE = LATENCY_PERCENTILES
_GATE = re.compile(
    r"^\s*(?:(?P<op>.+):)?(?P<metric>[a-z_0-9.-]+)\s*:\s*(?P<sign>[+-])\s*"
    r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>%|pp)\s*$"
)


def metric_name(text: str) -> str:
    """The canonical metric name of ``text`` (``p99.9`` -> ``p999``); ``ValueError`` if unknown."""
    name = ALIASES.get(text.strip(), text.strip())
    if name not in METRICS:
        known = ", ".join(LABELS.get(m, m) for m in METRICS)
        raise ValueError(f"unknown metric {text!r} (expected one of {known})")
    return name


@dataclass(frozen=True)
class Gate:
    """A ``--fail-on`` gate: fail when a significant change of ``metric`` passes ``limit``.

    ``direction`` is +1 (a rise fails) or -1 (a fall fails); ``limit`` >= 0 is a
    fraction (relative change, or rate points for ``error_rate``). ``op`` is
    ``TOTAL``, an operation name, or ``*`` for every row.
    """

    expr: str
    op: str
    metric: str
    direction: int
    limit: float

    def crossed(self, row: Row) -> bool:
        if row.inconclusive or not row.significant or row.change is None:
            return False
        return self.direction * row.change > self.limit


def parse_gate(expr: str) -> Gate:
    """Parse ``[OP:]METRIC:+N%`` / ``-N%``; ``ValueError`` says what was expected."""
    match = _GATE.match(expr)
    if not match:
        raise ValueError(
            f"expected a gate like 'p99:+10%', 'throughput:-5%' or 'get:p50:+20%', got {expr!r}"
        )
    metric = metric_name(match["metric"])
    return Gate(
        expr=expr.strip(),
        op=(match["op"] or TOTAL).strip(),
        metric=metric,
        direction=1 if match["sign"] == "+" else -1,
        limit=float(match["value"]) / 100.0,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Phase:
    """The whole-phase figure of each side, its change, and why there is none (``note``)."""

    base: float | None
    new: float | None
    change: float | None
    note: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One operation (or ``TOTAL``) and one metric, compared.

    ``inconclusive`` says why no gate can decide on this row (``None``: one can).
    """

    op: str
    metric: str
    base: Estimate | None
    new: Estimate | None
    change: float | None
    change_kind: ChangeKind
    p_value: float | None
    significant: bool
    inconclusive: str | None
    phase: Phase


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossedRow:
    op: str
    change: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UndecidedRow:
    op: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    """A gate: its status, the rows that crossed it, those that cannot decide on it."""

    expr: str
    status: GateStatus
    failed: bool
    crossed: list[CrossedRow]
    inconclusive: list[UndecidedRow]

    @property
    def gate(self) -> Gate:
        """The gate itself (its expression parsed)."""
        return parse_gate(self.expr)


@dataclass(frozen=True)
class GeomeanRow:
    """The geometric mean of one metric's medians over the operations, on each side."""

    metric: str
    base: float
    new: float
    change: float
    ops: int


@dataclass(frozen=True)
class RunInfo:
    """What the comparison says about each run it read."""

    id: str
    created_at: str
    profile: str
    intervals: int
    partial: bool
    generator_bound: bool

    @classmethod
    def of(cls, snapshot: Snapshot, report: Report, samples: int) -> RunInfo:
        return cls(
            id=snapshot.id,
            created_at=snapshot.created_at,
            profile=report.profile,
            intervals=samples,
            partial=bool(snapshot.partial),
            generator_bound=report.verdicts.generator_bound,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Diff:
    """The whole comparison: what ``diff --json`` prints (schema ``protobench.diff/1``).

    Runs, warnings, the rows and geomeans of the chosen metrics (a gate on another
    metric decides on its own rows, not shown), the gates and the exit code.
    orjson serialises it as is.
    """

    schema: str = DIFF_SCHEMA
    base: list[RunInfo]
    new: list[RunInfo]
    alpha: float
    confidence: float
    metrics: list[str]
    ops: list[str]
    warnings: list[str]
    notes: list[str]
    rows: list[Row]
    geomean: list[GeomeanRow]
    gates: list[GateResult]
    accept_inconclusive: bool
    exit_code: int
    profile: list[ShareChange] | None = None
    """The target's functions whose share of the running samples changed most (both sides
    profiled with ``--profile-target``; else null)."""

    def row(self, op: str, metric: str) -> Row:
        for row in self.rows:
            if row.op == op and row.metric == metric:
                return row
        raise KeyError((op, metric))

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the comparison as Python values."""
        plain: dict[str, Any] = to_plain(self)
        return plain


def exit_code(gates: Sequence[GateResult], accept_inconclusive: bool) -> int:
    """1 when a gate failed, else 4 when one could not decide (unless accepted), else 0."""
    if any(result.status == "failed" for result in gates):
        return ExitCode.FAILED
    if any(result.status == "inconclusive" for result in gates) and not accept_inconclusive:
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


def change_kind(metric: str) -> ChangeKind:
    """``points`` for the error rate (a difference of rates), ``relative`` otherwise."""
    return "points" if metric == "error_rate" else "relative"


def _change(metric: str, base: float | None, new: float | None) -> float | None:
    if base is None or new is None:
        return None
    if metric == "error_rate":
        return new - base
    if base == 0:
        return None
    return new / base - 1.0


def samples(items: Sequence[Interval], op: str, metric: str) -> list[float]:
    """The metric's value in every interval that has one (latency needs a success)."""
    values = []
    for item in items:
        figures = item.ops.get(op)
        if figures is None:
            continue
        if metric == "throughput":
            values.append(figures.throughput)
        elif metric == "error_rate":
            if figures.attempts:
                values.append(figures.error_rate)
        elif metric in DELAY_METRICS:
            delay = figures.generator_delay_us
            if delay is not None and (value := delay.value(DELAY_METRICS[metric])) is not None:
                values.append(value)
        elif (value := latency(figures, metric)) is not None:
            values.append(value)
    return values


def whole_phase(snapshots: Sequence[Snapshot], op: str, metric: str) -> tuple[float | None, int]:
    """The metric over the whole sustain phase of every snapshot together, and its sample count."""
    if metric in LATENCY_METRICS or metric in DELAY_METRICS:
        delay = metric in DELAY_METRICS
        hist = phase_histogram(snapshots, op, key="hist_delay" if delay else "hist")
        count = int(hist.get_total_count())
        if count == 0:
            return None, 0
        percentile = _PERCENTILE[DELAY_METRICS[metric] if delay else metric]
        return float(hist.get_value_at_percentile(percentile)), count
    ok, errors, seconds = phase_counts(snapshots, op)
    if metric == "throughput":
        return (ok / seconds if seconds > 0 else None), ok
    return (errors / (ok + errors) if ok + errors else None), ok + errors


def percentile_samples(metric: str) -> int:
    """The fewest samples for ``metric``'s percentile to differ from the maximum (p99: 100)."""
    name = DELAY_METRICS.get(metric, metric)
    if name not in LATENCY_METRICS:
        return 1
    return math.ceil(100.0 / (100.0 - _PERCENTILE[name]) - 1e-9)


def too_few(n_base: int, n_new: int, alpha: float, confidence: float) -> str | None:
    """Why samples of these sizes cannot decide a gate, or ``None`` when they can."""
    need = min_samples_for_ci(confidence)
    if min(n_base, n_new) < need:
        return f"need >= {need} samples a side, have {n_base} + {n_new}"
    if smallest_p(n_base, n_new) >= alpha:
        return f"no change can be significant at alpha={alpha:g} with {n_base} + {n_new} samples"
    return None


def compare_samples(
    op: str,
    metric: str,
    base: Sequence[float],
    new: Sequence[float],
    alpha: float,
    confidence: float,
) -> tuple[Estimate | None, Estimate | None, float | None, float | None, bool]:
    """(base estimate, new estimate, change of medians, p-value, significant)."""
    base_est = estimate(base, confidence) if base else None
    new_est = estimate(new, confidence) if new else None
    if base_est is None or new_est is None:
        return base_est, new_est, None, None, False
    change = _change(metric, base_est.median, new_est.median)
    p = mann_whitney_p(base, new)
    return base_est, new_est, change, p, p < alpha


@dataclass(frozen=True)
class Run:
    """A snapshot read for a comparison: its typed report and its sustain intervals."""

    snapshot: Snapshot
    report: Report
    intervals: list[Interval]

    @classmethod
    def of(cls, snapshot: Snapshot) -> Run:
        """:class:`SnapshotError` when its report does not load."""
        sustain = intervals(snapshot, "sustain", MIN_INTERVAL_FRACTION)
        return cls(snapshot, snapshot.report, sustain)

    @property
    def id(self) -> str:
        return self.snapshot.id

    @property
    def provenance(self) -> Provenance:
        """Where and how the run was made (the snapshot's, not the report's)."""
        return self.snapshot.provenance

    def info(self) -> RunInfo:
        return RunInfo.of(self.snapshot, self.report, len(self.intervals))


_FACTS: tuple[tuple[str, Callable[[Run], object]], ...] = (
    ("host", lambda run: run.provenance.get("host")),
    ("CPU", lambda run: f"{run.provenance.get('cpu_model')} x{run.provenance.get('cpu_count')}"),
    ("protocol", lambda run: run.report.protocol),
    ("profile", lambda run: run.report.profile),
    ("profile hash", lambda run: str(run.provenance.get("profile_sha256"))[:12]),
    ("tool version", lambda run: run.provenance["tool_version"]),
    ("target sampling", lambda run: _sampling(run.snapshot)),
)
"""What two runs must share to be compared: each fact's name and how to read it."""


def comparability(base: Sequence[Run], new: Sequence[Run]) -> list[str]:
    """Why these runs may not be comparable, one sentence each (empty when they are)."""
    warnings = []
    given = {key for run in [*base, *new] for key in run.provenance.get("overrides", {})}
    keys = sorted(given - set(SAMPLING))  # the "target sampling" fact says it
    overrides = [(f"{key} override", _override(key)) for key in keys]
    for name, fact in [*_FACTS, *overrides]:
        base_values = sorted({str(fact(run)) for run in base})
        new_values = sorted({str(fact(run)) for run in new})
        if len(set(base_values) | set(new_values)) > 1:
            warnings.append(
                f"other {name}: base {' | '.join(base_values)}, new {' | '.join(new_values)}"
            )
    for side, runs in (("base", base), ("new", new)):
        warnings.extend(warning for run in runs for warning in _run_warnings(side, run))
    return warnings


SAMPLING = ("profile_target", "profiler", "profile_rate", "profile_native", "pprof", "pprof_extra")
"""The settings of how the target is sampled (compared as one fact, ``target sampling``)."""


def _sampling(snapshot: Snapshot) -> str:
    """How the run's target was sampled (``off``): sampling perturbs the target it measures."""
    profile = snapshot.target_profile
    if profile is None:
        return "off"
    return f"{profile.label} (costs the target: {overhead(profile)})"


PROFILE_CHANGES = 15
"""The functions ``diff`` lists, largest change in share first."""
MOVED = 0.001
"""The least change in share (0.1 percentage point) that ``diff`` lists."""


def profile_changes(base: Sequence[Snapshot], new: Sequence[Snapshot]) -> list[ShareChange] | None:
    """The functions whose share of the target's running samples changed most between the
    sides (each side's profiles merged), or None when a side has no target profile."""
    sides = [[s.target_profile.cpu for s in side if s.target_profile] for side in (base, new)]
    if not all(sides):
        return None
    changes = share_changes(merged(sides[0]), merged(sides[1]))
    moved = [c for c in changes if max(abs(c.self_change), abs(c.total_change)) >= MOVED]
    return moved[:PROFILE_CHANGES]


def _run_warnings(side: str, run: Run) -> list[str]:
    """A generator-bound run, a partial run."""
    warnings = []
    verdicts = run.report.verdicts
    if verdicts.generator_bound:
        warnings.append(f"{side} run {run.id} was generator-bound: {verdicts.reason}")
    if run.snapshot.partial:
        warnings.append(f"{side} run {run.id} is partial ({run.report.stop_reason})")
    return warnings


def _override(key: str) -> Callable[[Run], object]:
    def fact(run: Run) -> str:
        value = run.provenance.get("overrides", {}).get(key)
        return "(not given)" if value is None else json.dumps(value, sort_keys=True)

    return fact


@dataclass(frozen=True)
class _Side:
    """One side of a comparison: its runs and their operations."""

    runs: list[Run]
    ops: list[str]
    pooled: list[Interval]
    """The intervals of every run together: the samples of the side's statistics."""

    @classmethod
    def of(cls, snapshots: Sequence[Snapshot]) -> _Side:
        runs = [Run.of(s) for s in snapshots]
        ops = [op for s in snapshots for op in s.operations]
        return cls(runs, ops, [item for run in runs for item in run.intervals])

    @property
    def snapshots(self) -> list[Snapshot]:
        return [run.snapshot for run in self.runs]


def compare(
    base: Sequence[Snapshot],
    new: Sequence[Snapshot],
    metrics: Sequence[str] = METRICS,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
    gates: Sequence[Gate] = (),
    accept_inconclusive: bool = False,
) -> Diff:
    """Compare the sustain phases of ``base`` and ``new`` snapshots (each side non-empty)."""
    if not base or not new:
        raise ValueError("each side of a comparison needs at least one snapshot")
    base_side, new_side = _Side.of(base), _Side.of(new)
    if not _measures_delay([*base, *new]):  # user-clock runs: no generator delay to compare
        metrics = [m for m in metrics if m not in DELAY_METRICS]
    ops = [op for op in dict.fromkeys(base_side.ops) if op in new_side.ops]
    one_side = _one_side_ops(base_side.ops, new_side.ops)
    warnings = comparability(base_side.runs, new_side.runs)
    warnings.extend(f"operation {op!r} is only in the {side} runs" for op, side in one_side.items())
    _check_gate_ops(gates, [*ops, *one_side])
    n_base, n_new = len(base_side.pooled), len(new_side.pooled)
    wanted = tuple(dict.fromkeys([*metrics, *(g.metric for g in gates)]))
    protocols = {run.report.protocol for run in [*base_side.runs, *new_side.runs]}
    rows = [
        _row(
            op,
            metric,
            base_side,
            new_side,
            alpha,
            confidence,
            _undecidable(op, protocols, one_side),
        )
        for op in [*ops, TOTAL]
        for metric in wanted
    ]
    results = [_gate_result(gate, rows, one_side) for gate in gates]
    return Diff(
        base=[run.info() for run in base_side.runs],
        new=[run.info() for run in new_side.runs],
        alpha=alpha,
        confidence=confidence,
        metrics=list(metrics),
        ops=ops,
        warnings=warnings,
        notes=_sample_notes(n_base, n_new, alpha, confidence),
        rows=[row for row in rows if row.metric in metrics],
        geomean=_geomeans(rows, metrics) if len(ops) > 1 else [],
        gates=results,
        accept_inconclusive=accept_inconclusive,
        exit_code=exit_code(results, accept_inconclusive),
        profile=profile_changes(base, new),
    )


def _measures_delay(snapshots: Sequence[Snapshot]) -> bool:
    """Whether any of the runs measured the generator's delay (the kernel clock)."""
    return any(
        "hist_delay" in hists
        for s in snapshots
        for hists in s.histograms.get("sustain", {}).values()
    )


def _one_side_ops(base_ops: Sequence[str], new_ops: Sequence[str]) -> dict[str, str]:
    """The operations only one side ran, each with that side (``base`` or ``new``)."""
    return {
        op: side
        for side, names, other in (("base", base_ops, new_ops), ("new", new_ops, base_ops))
        for op in names
        if op not in other
    }


def _check_gate_ops(gates: Sequence[Gate], ops: Sequence[str]) -> None:
    """``ValueError`` for a gate on an operation neither side ran."""
    for gate in gates:
        if gate.op not in (TOTAL, "*", *ops):
            raise ValueError(f"gate {gate.expr!r}: no operation {gate.op!r} in these runs")


def _undecidable(op: str, protocols: set[str], one_side: dict[str, str]) -> str | None:
    """Why no gate can decide on ``op``: other protocols; for ``TOTAL``, other operations."""
    if len(protocols) > 1:
        return "the runs are of different protocols"
    if op == TOTAL and one_side:
        return "the runs do not have the same operations"
    return None


def _row(
    op: str,
    metric: str,
    base: _Side,
    new: _Side,
    alpha: float,
    confidence: float,
    undecidable: str | None,
) -> Row:
    """``op``'s ``metric`` compared: interval statistics, then the whole phase.

    ``undecidable`` is why no gate can decide on any row of ``op``, if anything.
    """
    base_samples = samples(base.pooled, op, metric)
    new_samples = samples(new.pooled, op, metric)
    base_est, new_est, change, p, significant = compare_samples(
        op, metric, base_samples, new_samples, alpha, confidence
    )
    return Row(
        op=op,
        metric=metric,
        base=base_est,
        new=new_est,
        change=change,
        change_kind=change_kind(metric),
        p_value=p,
        significant=significant,
        inconclusive=undecidable or too_few(len(base_samples), len(new_samples), alpha, confidence),
        phase=_phase(base.snapshots, new.snapshots, op, metric),
    )


def _phase(base: Sequence[Snapshot], new: Sequence[Snapshot], op: str, metric: str) -> Phase:
    """The whole phase compared; no change when a side has too few samples."""
    phase_base, base_count = whole_phase(base, op, metric)
    phase_new, new_count = whole_phase(new, op, metric)
    change = _change(metric, phase_base, phase_new)
    need = percentile_samples(metric)
    if change is not None and min(base_count, new_count) < need:
        note = f"need >= {need:,} samples, have {base_count:,} + {new_count:,}"
        return Phase(base=phase_base, new=phase_new, change=None, note=note)
    return Phase(base=phase_base, new=phase_new, change=change, note=None)


def _gate_result(gate: Gate, rows: Sequence[Row], one_side: dict[str, str]) -> GateResult:
    """The rows of ``gate``'s metric and operation that crossed it, and those that cannot decide."""
    matching = [row for row in rows if row.metric == gate.metric and gate.op in ("*", row.op)]
    undecided = [(row.op, why) for row in matching if (why := row.inconclusive)]
    if gate.op in one_side:
        undecided.append(
            (gate.op, f"operation {gate.op!r} is only in the {one_side[gate.op]} runs")
        )
    crossed = [CrossedRow(op=row.op, change=row.change) for row in matching if gate.crossed(row)]
    status: GateStatus = "failed" if crossed else "inconclusive" if undecided else "passed"
    return GateResult(
        expr=gate.expr,
        status=status,
        failed=status == "failed",
        crossed=crossed,
        inconclusive=[UndecidedRow(op=op, reason=why) for op, why in undecided],
    )


def _sample_notes(n_base: int, n_new: int, alpha: float, confidence: float) -> list[str]:
    notes = []
    need = min_samples_for_ci(confidence)
    if min(n_base, n_new) < need:
        notes.append(
            f"need >= {need} intervals per side for a {confidence:.0%} confidence interval "
            f"(have {n_base} + {n_new}): use a longer --duration or a shorter --interval"
        )
    if n_base and n_new and smallest_p(n_base, n_new) >= alpha:
        notes.append(
            f"with {n_base} + {n_new} intervals no change can be significant at "
            f"alpha={alpha:g}: use a longer --duration or a shorter --interval"
        )
    return notes


def _geomeans(rows: Sequence[Row], metrics: Sequence[str]) -> list[GeomeanRow]:
    out = []
    for metric in metrics:
        if metric == "error_rate" or metric in DELAY_METRICS:
            continue
        pairs = [
            (row.base.median, row.new.median)
            for row in rows
            if row.metric == metric and row.op != TOTAL and row.base and row.new
        ]
        base = geomean([b for b, _ in pairs])
        new = geomean([n for _, n in pairs])
        if base is not None and new is not None:
            out.append(GeomeanRow(metric, base, new, new / base - 1.0, len(pairs)))
    return out
