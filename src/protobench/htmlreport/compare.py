"""The comparison page of ``protobench diff BASE NEW --report FILE``.

It opens on the answer: with ``--fail-on`` gates, a PASS / FAIL /
INCONCLUSIVE badge (``diff``'s exit code 0, 1 or 4) and each gate's outcome;
then the warnings (runs that may not be comparable), the runs, and every
change ``diff`` measured as a row: each side's median with its confidence
interval, the change, the Mann-Whitney p-value and whether it is significant
(a worse significant change in red, a better one in green, ``~`` none). Per
operation and ``TOTAL`` the runs are overlaid (each from its own start):
throughput, p50 and p99 over time, each chart titled with its change and its
significance, and their sustain latency by percentile on one log
``1 / (1 - p)`` axis; when both sides sampled their target, the differential
flame graph (:func:`~protobench.htmlreport.flame.diff_flame`). ``diff``'s own
text follows, as the terminal prints it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from protobench.engine.stacks.model import ShareChange, merged
from protobench.htmlreport import charts, flame
from protobench.htmlreport.charts import Axis, ChartSet
from protobench.htmlreport.page import document, grid, table, with_flames
from protobench.htmlreport.verdict import OUTCOMES
from protobench.htmlreport.view import RunView
from protobench.snapshots.diff import DELAY_METRICS, LABELS, Diff, Row
from protobench.snapshots.series import TOTAL
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.thresholds import format_change, format_value

LATENCY_CHARTED = ("p50", "p99")


def _label(metric: str) -> str:
    return LABELS.get(metric, metric)


def _value(metric: str, value: float | None) -> str:
    """A figure in its metric's unit (the generator's delay is a latency, in µs)."""
    return format_value(DELAY_METRICS.get(metric, metric), value)


def direction(row: Row) -> str:
    """``worse``, ``better``, ``same`` (no significant change) or ``undecided``."""
    if row.inconclusive or row.change is None or row.p_value is None:
        return "undecided"
    if not row.significant:
        return "same"
    rise_is_worse = row.metric != "throughput"
    return "worse" if (row.change > 0) == rise_is_worse else "better"


def significance(row: Row) -> str:
    """The change in words: ``+12.34% (p=0.003, significant)``, ``~ (p=0.41)``, ``?``."""
    if row.p_value is None:
        return "no samples to compare"
    if row.inconclusive:
        return f"? (p={row.p_value:.3f}: {row.inconclusive})"
    if not row.significant:
        return f"~ no significant change (p={row.p_value:.3f})"
    return f"{format_change(row.metric, row.change)} (p={row.p_value:.3f}, significant)"


def _side(metric: str, row: Row, new: bool) -> str:
    estimate = row.new if new else row.base
    if estimate is None:
        return "-"
    median = _value(metric, estimate.median)
    if estimate.ci_low is None or estimate.ci_high is None:
        return f"{median} (no CI, n={estimate.n})"
    low, high = _value(metric, estimate.ci_low), _value(metric, estimate.ci_high)
    return f"{median} [{low}, {high}]"


def shown(diff: Diff) -> list[str]:
    """The operations shown, as ``diff`` shows them: ``TOTAL`` only beside several."""
    return [TOTAL, *diff.ops] if len(diff.ops) > 1 else diff.ops or [TOTAL]


def changes_table(diff: Diff) -> str:
    """Every (operation, metric) ``diff`` compared, TOTAL first."""
    order = {op: index for index, op in enumerate(shown(diff))}
    rows = sorted(
        diff.rows, key=lambda r: (order.get(r.op, len(order)), diff.metrics.index(r.metric))
    )
    body = "".join(
        f"<tr class='{direction(row)}'><td>{html.escape(row.op)}</td>"
        f"<td>{html.escape(_label(row.metric))}</td>"
        f"<td class='num'>{html.escape(_side(row.metric, row, False))}</td>"
        f"<td class='num'>{html.escape(_side(row.metric, row, True))}</td>"
        f"<td class='change'>{html.escape(significance(row))}</td></tr>"
        for row in rows
        if row.metric in diff.metrics and row.op in order
    )
    head = (
        "<tr><th>operation</th><th>metric</th><th>base: median [95% CI]</th>"
        "<th>new: median [95% CI]</th><th>change</th></tr>"
    )
    geomean = [
        [
            f"geomean of {g.ops} operations",
            _label(g.metric),
            _value(g.metric, g.base),
            _value(g.metric, g.new),
            format_change(g.metric, g.change),
        ]
        for g in diff.geomean
    ]
    return f"<table class='changes'>{head}{body}</table>" + (
        table(["", "metric", "base", "new", "change"], geomean) if geomean else ""
    )


def gates_section(diff: Diff) -> str:
    """The badge of the gates (``diff``'s exit code) and each gate's outcome."""
    if not diff.gates:
        shown = [r for r in diff.rows if r.metric in diff.metrics]
        moved = sum(direction(r) in ("worse", "better") for r in shown)
        return (
            "<section id='verdict'><div class='verdict'>"
            f"<span class='headline'>{moved} of {len(shown)} comparisons changed "
            f"significantly (Mann-Whitney U, alpha {diff.alpha:g}); no gate set (--fail-on)"
            "</span></div></section>"
        )
    outcome = OUTCOMES.get(ExitCode(diff.exit_code), "INCONCLUSIVE")
    statuses = [g.status for g in diff.gates]
    headline = (
        f"{statuses.count('failed')} of {len(statuses)} gates crossed"
        if "failed" in statuses
        else f"{statuses.count('inconclusive')} of {len(statuses)} gates cannot decide"
        if "inconclusive" in statuses
        else f"every gate held ({len(statuses)})"
    )
    if "inconclusive" in statuses and diff.accept_inconclusive and "failed" not in statuses:
        headline += " (accepted: --accept-inconclusive)"
    lines = []
    for result in diff.gates:
        metric = result.gate.metric
        if result.status == "failed":
            where = ", ".join(f"{r.op} {format_change(metric, r.change)}" for r in result.crossed)
            lines.append(f"✘ {result.expr}: crossed ({where})")
        elif result.status == "inconclusive":
            why = "; ".join(f"{u.op}: {u.reason}" for u in result.inconclusive)
            lines.append(f"? {result.expr}: cannot decide ({why})")
        else:
            lines.append(f"✔ {result.expr}: held")
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (
        "<section id='verdict'><div class='verdict'>"
        f"<span class='badge {outcome}'>{outcome}</span>"
        f"<span class='headline'>{html.escape(headline)}</span>"
        f"<span class='code'>exit code {diff.exit_code}</span></div>"
        f"<ul class='gates'>{items}</ul></section>"
    )


def _runs(views: Sequence[RunView], side: str) -> list[tuple[str, RunView]]:
    return [(f"{side} {view.id}", view) for view in views]


def _title(diff: Diff, op: str, metric: str) -> str:
    try:
        row = diff.row(op, metric)
    except KeyError:
        return f"{op}: {_label(metric)}"
    return f"{op}: {_label(metric)} · {significance(row)}"


def profile_changes(
    base: Sequence[RunView], new: Sequence[RunView], changes: Sequence[ShareChange] | None
) -> str:
    """The differential flame graph when every run of both sides sampled its target."""
    sides = [[v.profile.cpu for v in side if v.profile is not None] for side in (base, new)]
    if changes is None or not all(sides):
        return ""
    return with_flames(flame.diff_flame(merged(sides[0]), merged(sides[1]), changes))


def compare_page(
    base: Sequence[RunView],
    new: Sequence[RunView],
    diff: Diff,
    text: str,
    changes: Sequence[ShareChange] | None = None,
) -> str:
    """Base and new runs overlaid under ``diff``'s answer; ``text`` is its terminal output;
    ``changes`` are the shares of the target's functions that changed (both sides sampled)."""
    runs = _runs(base, "base") + _runs(new, "new")
    out = ChartSet()
    span = charts.time_range([op for _, view in runs for op in view.ops], [])
    x = charts.time_axis(span[1])
    names = shown(diff)
    sections = []
    for index, name in enumerate(names):
        keys: list[tuple[str, str]] = []
        curves = []
        for number, (label, view) in enumerate(runs):
            for position, (op, spec) in enumerate(zip(view.ops, view.spectra, strict=True)):
                if op.name != name:
                    continue
                key = f"r{number}.op{position}"
                charts.op_columns(out, key, op)
                keys.append((label, key))
                if spec.corrected:
                    curves.append((label, spec.corrected))
        cells = [
            out.cell(
                f"cmp{index}-throughput",
                charts.overlay(
                    out,
                    _title(diff, name, "throughput"),
                    "ok",
                    keys,
                    x,
                    Axis("rate", "ok per second"),
                ),
            )
        ]
        for metric in LATENCY_CHARTED:
            axis = Axis("us", "latency", log=True, zero=False)
            chart = charts.overlay(out, _title(diff, name, metric), metric, keys, x, axis)
            cells.append(out.cell(f"cmp{index}-{metric}", chart))
        if curves:
            title = f"{name}: latency by percentile (sustain)"
            cells.append(
                out.cell(f"cmp{index}-spectrum", charts.spectrum(out, f"cmp{index}", title, curves))
            )
        empty = [] if curves else ["no latency recorded in sustain"]
        sections.append(grid(f"cmp{index}", name, cells, empty))
    info = {run.id: run for run in [*diff.base, *diff.new]}
    rows = []
    for label, view in runs:
        run = info.get(view.id)
        rows.append(
            [
                label,
                view.title,
                dict(view.facts).get("started", "-"),
                str(run.intervals) if run else "-",
                "yes" if run and run.partial else "no",
                "yes" if run and run.generator_bound else "no",
                view.verdict.outcome,
            ]
        )
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in diff.warnings)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in diff.notes)
    body = (
        "<h1>protobench comparison</h1>"
        + gates_section(diff)
        + (
            f"<h2>the runs may not be comparable</h2><ul class='caveats'>{warnings}</ul>"
            if warnings
            else ""
        )
        + "<h2 id='runs'>runs</h2>"
        + table(
            [
                "run",
                "profile",
                "started",
                "sustain intervals",
                "partial",
                "generator-bound",
                "its own verdict",
            ],
            rows,
        )
        + "<h2 id='changes'>changes</h2>"
        + f"<p class='hint'>Medians of the sustain intervals with their {diff.confidence:.0%} "
        f"confidence intervals; Mann-Whitney U at alpha {diff.alpha:g}: '~' is no significant "
        "change. The charts show each run from its own start, warmup included.</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + changes_table(diff)
        + "".join(sections)
        + profile_changes(base, new, changes)
        + "<h2 id='diff-text'>as the terminal prints it</h2>"
        + f"<pre>{html.escape(text)}</pre>"
    )
    return document("protobench comparison", body, out, span)
