"""The text of ``protobench diff``: the comparison as terminal tables, warnings first.

Shared by the command (:mod:`.diff_cmd`) and the HTML comparison page
(:mod:`.report_cmd`, which embeds the same text).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from protobench.cli.profile_render import change_lines
from protobench.cli.render import us
from protobench.termtext import visible_tree
from protobench.vocab.thresholds import format_change
from protobench.vocab.units import plain_number

if TYPE_CHECKING:  # numpy and hdrhistogram load in the command, not for --help
    from protobench.snapshots.diff import Diff, GateResult, GeomeanRow, Row, RunInfo
    from protobench.snapshots.stats import Estimate


def format_value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "throughput":
        return f"{_si(value)}/s"
    if metric == "error_rate":
        return f"{value:.2%}"
    return us(value)


def _si(value: float) -> str:
    """Three significant digits with a k/M/G suffix from 10,000 on; plain digits below
    (``1,000``: never ``1e+03``, nor ``1e+03k`` for 999,999)."""
    if abs(value) < 9_999.5:
        return plain_number(value)
    for factor, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
        text = f"{value / factor:.3g}"
        if "e" not in text:
            return f"{text}{suffix}"
    return f"{plain_number(value / 1e9)}G"


def _side(metric: str, est: Estimate | None) -> str:
    if est is None:
        return "-"
    spread = est.spread
    margin = "± ∞" if spread is None or math.isinf(spread) else f"± {spread:.0%}"
    return f"{format_value(metric, est.median)} {margin}"


def _verdict(row: Row) -> str:
    if row.base is None or row.new is None or row.p_value is None:
        return "-"
    sizes = f"n={row.base.n}" if row.base.n == row.new.n else f"n={row.base.n}+{row.new.n}"
    if row.inconclusive:
        return f"? (p={row.p_value:.3f} {sizes}: {row.inconclusive})"
    head = format_change(row.metric, row.change) if row.significant else "~"
    return f"{head} (p={row.p_value:.3f} {sizes})"


def _phase(row: Row) -> str:
    phase = row.phase
    base = format_value(row.metric, phase.base)
    new = format_value(row.metric, phase.new)
    change = f"? ({phase.note})" if phase.note else format_change(row.metric, phase.change)
    return f"{base} → {new} {change}"


def _geomean_cells(item: GeomeanRow) -> list[str]:
    return [
        "geomean",
        format_value(item.metric, item.base),
        format_value(item.metric, item.new),
        format_change(item.metric, item.change),
        "",
    ]


def _tables(blocks: list[list[list[str]]]) -> list[str]:
    """Blocks of cells, aligned on common column widths, a blank line before each."""
    cells = [line for block in blocks for line in block]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    out = []
    for block in blocks:
        out.append("")
        out.extend(
            "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
            for line in block
        )
    return out


def _runs(label: str, runs: list[RunInfo]) -> str:
    samples = sum(run.intervals for run in runs)
    ids = ", ".join(run.id for run in runs)
    count = f"{len(runs)} runs: " if len(runs) > 1 else ""
    return f"{label} {count}{ids} ({samples} intervals)"


def render_text(diff: Diff) -> str:
    """The comparison as a terminal table, warnings first (its strings made visible)."""
    from protobench.snapshots.series import TOTAL  # noqa: PLC0415

    diff = visible_tree(diff)

    out = [_runs("base:", diff.base), _runs("new: ", diff.new)]
    if diff.warnings:
        out.append("WARNING: the runs may not be comparable:")
        out.extend(f"  - {warning}" for warning in diff.warnings)
    out.extend(f"note: {note}" for note in diff.notes)
    out.append(
        f"sustain intervals: median ± {diff.confidence:.0%} CI; Mann-Whitney U at "
        f"alpha={diff.alpha:g}, '~' = no significant change; whole phase from merged histograms"
    )
    shown = [*diff.ops, TOTAL] if len(diff.ops) > 1 else diff.ops or [TOTAL]
    out.extend(_tables([_metric_block(diff, metric, shown) for metric in diff.metrics]))
    if diff.profile:
        out.append("")
        out.extend(change_lines(diff.profile))
    if diff.gates:
        out.append("")
    out.extend(_gate_line(result, diff.accept_inconclusive) for result in diff.gates)
    return "\n".join(out)


def _metric_block(diff: Diff, metric: str, shown: list[str]) -> list[list[str]]:
    """One metric's cells: a heading, a row per shown operation, the geomean."""
    from protobench.snapshots.diff import LABELS  # noqa: PLC0415

    lines = [[LABELS.get(metric, metric), "base", "new", "vs base", "whole phase"]]
    for op in shown:
        row = diff.row(op, metric)
        lines.append(
            [op, _side(metric, row.base), _side(metric, row.new), _verdict(row), _phase(row)]
        )
    lines.extend(_geomean_cells(g) for g in diff.geomean if g.metric == metric)
    return lines


def _gate_line(result: GateResult, accept_inconclusive: bool) -> str:
    if result.status == "failed":
        metric = result.gate.metric
        where = ", ".join(f"{r.op} {format_change(metric, r.change)}" for r in result.crossed)
        return f"gate FAILED: {result.expr} ({where})"
    if result.status == "inconclusive":
        why = "; ".join(f"{u.op}: {u.reason}" for u in result.inconclusive)
        accepted = " (accepted)" if accept_inconclusive else ""
        return f"gate INCONCLUSIVE{accepted}: {result.expr} ({why})"
    return f"gate passed: {result.expr}"
