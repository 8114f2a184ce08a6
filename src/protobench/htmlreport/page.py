"""The one HTML file of a run's report: the answer first, then the charts and tables.

The page opens on the verdict (a PASS / FAIL / INCONCLUSIVE badge, one
sentence, the caveats, every threshold and check as a row) and the key
figures as cards; then the run at a glance (throughput with the offered rate,
latency p50/p99/p99.9 over time, errors by code, the latency by percentile,
the target's CPU and memory), then each operation, the resources, the
tables and the provenance. It needs no network: the charts are drawn by the
page's own script from one JSON document (:mod:`.charts`). Each chart is a
``<figure class="chart" data-chart=NAME>``; the browser test checks that
each one is drawn.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable, Sequence
from importlib import resources

from protobench.htmlreport import charts, flame
from protobench.htmlreport.charts import ChartSet
from protobench.htmlreport.verdict import Card, CheckRow, Verdict
from protobench.htmlreport.view import LABELS, Mark, RunView

NUMERIC = frozenset({"ok", "errors", "error rate", "throughput", *LABELS.values()})
"""The columns of the sustain table that hold figures (right-aligned)."""
STYLE = resources.files(__package__).joinpath("report.css").read_text(encoding="utf-8")


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Collection[str] = ()
) -> str:
    """A table of text cells; the columns named in ``numeric`` are right-aligned."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            klass = ' class="num"' if headers[index] in numeric else ""
            cells.append(f"<td{klass}>{html.escape(cell)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def document(
    title: str,
    body: str,
    out: ChartSet,
    time_range: tuple[float, float],
    marks: Sequence[Mark] = (),
) -> str:
    """The whole page: ``body``, then the charts' data and script."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{body}{out.script(time_range, marks)}</body></html>\n"
    )


def grid(section_id: str, title: str, cells: Sequence[str], notes: Sequence[str] = ()) -> str:
    """A titled section of charts, with one line for what had nothing to draw."""
    note = f"<p class='none'>{html.escape('; '.join(notes))}</p>" if notes else ""
    return (
        f"<h2 id='{section_id}'>{html.escape(title)}</h2>{note}"
        f"<div class='grid'>{''.join(cells)}</div>"
    )


def _check_rows(rows: Sequence[CheckRow]) -> str:
    out = []
    for row in rows:
        mark = "<td class='pass'>✔ pass</td>" if row.ok else "<td class='fail'>✘ fail</td>"
        why = f"<div class='why'>{html.escape(row.note)}</div>" if row.note else ""
        out.append(
            f"<tr>{mark}<td><code>{html.escape(row.expr)}</code>{why}</td>"
            f"<td class='num'>{html.escape(row.observed)}</td></tr>"
        )
    return "".join(out)


def checks_table(rows: Sequence[CheckRow]) -> str:
    """Every threshold, then every built-in check: pass or fail, expression, observed."""
    groups = [
        ("your thresholds", [r for r in rows if r.kind == "threshold"]),
        ("built-in checks", [r for r in rows if r.kind == "check"]),
    ]
    body = "".join(
        f"<tr><th colspan='3' class='group'>{title}</th></tr>{_check_rows(part)}"
        for title, part in groups
        if part
    )
    head = "<tr><th>result</th><th>check</th><th>observed</th></tr>"
    return f"<table class='checks'>{head}{body}</table>" if body else ""


def verdict_section(item: Verdict, cards: Sequence[Card]) -> str:
    """The badge and its sentence, the caveats, then the checks beside the key figures."""
    caveats = "".join(f"<li>{html.escape(c)}</li>" for c in item.caveats)
    return (
        "<section id='verdict'><div class='verdict'>"
        f"<span class='badge {item.outcome}'>{item.outcome}</span>"
        f"<span class='headline'>{html.escape(item.headline)}</span>"
        f"<span class='code'>exit code {item.exit_code}</span></div>"
        + (f"<ul class='caveats'>{caveats}</ul>" if caveats else "")
        + f"<div class='answer'>{checks_table(item.rows)}{cards_section(cards)}</div>"
        + "</section>"
    )


def cards_section(items: Sequence[Card]) -> str:
    """The key figures, one card each."""
    cards = "".join(
        f"<div class='card {card.tone}'><div class='label'>{html.escape(card.label)}</div>"
        f"<div class='value'>{html.escape(card.value)}</div>"
        f"<div class='detail'>{html.escape(card.detail)}</div></div>"
        for card in items
    )
    return f"<div class='cards' id='figures'>{cards}</div>"


def _overview(view: RunView, out: ChartSet, x: charts.Axis) -> str:
    """The run at a glance: TOTAL's throughput, latency and errors, its spectrum, the target."""
    total = view.ops[0]
    key = "op0"
    if not total.t:
        return grid("overview", "the run at a glance", [], ["no interval was measured"])
    cells = [
        out.cell(
            "overview-throughput",
            charts.throughput(out, key, total, x, "throughput (all operations)"),
        )
    ]
    if charts.has_latency(total):
        chart = charts.latency(out, key, total, x, ("p50", "p99", "p999"))
        cells.append(out.cell("overview-latency", chart))
    elif measured := [
        (f"op{i}", op) for i, op in enumerate(view.ops) if i and charts.has_latency(op)
    ]:
        cells.append(out.cell("overview-latency", charts.each_op(out, measured, x)))
    if total.errors:
        cells.append(out.cell("overview-errors", charts.errors(out, key, total, x)))
    if len(view.ops) == 2 and charts.has_counters(total):  # one operation: no section of its own
        cells.append(out.cell("overview-counters", charts.counters(out, key, total, x)))
    spectrum = view.spectra[0]
    if spectrum.corrected:
        cells.append(out.cell("overview-spectrum", charts.run_spectrum(out, key, spectrum)))
    res = view.resources
    if res.t and "rss" in res.target:
        cells.append(out.cell("overview-target", charts.target(out, res, x)))
    notes = [spectrum.note] if spectrum.note else []
    if view.left_out:
        notes.append(view.left_out)
    return grid("overview", "the run at a glance", cells, notes)


def _op_sections(view: RunView, out: ChartSet, x: charts.Axis) -> list[str]:
    sections = []
    single = len(view.ops) == 2  # TOTAL and one operation: the overview is the op's
    for index, (op, spec) in enumerate(zip(view.ops, view.spectra, strict=True)):
        if (index == 0 and single) or not op.t:
            continue
        key = f"op{index}"
        latency = charts.latency(out, key, op, x) if charts.has_latency(op) else None
        spectrum = charts.run_spectrum(out, key, spec) if spec.corrected else None
        errors = charts.errors(out, key, op, x) if op.errors else None
        counters = charts.counters(out, key, op, x) if charts.has_counters(op) else None
        cells = [
            out.cell(f"{key}-throughput", charts.throughput(out, key, op, x)),
            out.cell(f"{key}-latency", latency),
            out.cell(f"{key}-spectrum", spectrum),
            out.cell(f"{key}-errors", errors),
            out.cell(f"{key}-counters", counters),
        ]
        notes = [
            text
            for text, fig in (
                ("no successful operation", latency),
                (spec.note, spectrum),
                ("no errors", errors),
                ("no protocol counters", counters),
            )
            if fig is None and text
        ]
        sections.append(grid(key, op.name, cells, notes))
    return sections


def _resource_section(view: RunView, out: ChartSet, x: charts.Axis) -> str:
    res = view.resources
    if not res.t:
        return grid("resources", "resources", [], ["no resource samples"])
    cells = [out.cell("res-cpu", charts.cpu(out, res, x))]
    if "rss" in res.target:
        cells.append(out.cell("res-target", charts.target(out, res, x)))
    if "fds" in res.target:
        cells.append(out.cell("res-fds", charts.fds(out, res, x)))
    if "mem_used" in res.host:
        cells.append(out.cell("res-host-memory", charts.host_memory(out, res, x)))
    notes = [] if res.target else ["no target process sampled"]
    return grid("resources", "resources", cells, notes)


def _rows_table(rows: Sequence[dict[str, str]], empty: str, numeric: Collection[str] = ()) -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    return table(list(rows[0]), [list(row.values()) for row in rows], numeric)


def _tables(view: RunView) -> str:
    notices = "".join(f"<li>{html.escape(n)}</li>" for n in view.notices)
    return (
        "<h2 id='summary'>sustain phase, per operation</h2>"
        + _rows_table(view.summary, "no sustain phase", NUMERIC)
        + (f"<h2 id='notices'>notices</h2><ul>{notices}</ul>" if notices else "")
    )


def header(view: RunView) -> str:
    facts = " · ".join(
        f"<b>{html.escape(key)}</b> {html.escape(value)}" if key else html.escape(value)
        for key, value in view.facts
        if value
    )
    return (
        f"<h1>protobench report: {html.escape(view.title)}</h1>"
        f"<div class='meta'>{html.escape(view.id)}</div><div class='facts'>{facts}</div>"
    )


def with_flames(section: str) -> str:
    """``section`` with the flame graphs' style and script, when it has one ("" stays "")."""
    if not section:
        return ""
    return f"<style>{flame.STYLE}</style>{section}<script>{flame.SCRIPT}</script>"


def run_page(view: RunView) -> str:
    """The report page of one run."""
    out = ChartSet()
    span = charts.time_range(view.ops, view.marks)
    x = charts.time_axis(span[1])
    links = ["<a href='#overview'>at a glance</a>"]
    if len(view.ops) > 2:
        links += [f"<a href='#op{i}'>{html.escape(op.name)}</a>" for i, op in enumerate(view.ops)]
    else:
        links += [f"<a href='#op1'>{html.escape(view.ops[-1].name)}</a>"]
    links.append("<a href='#resources'>resources</a>")
    profiled = ""
    if view.profile is not None:
        links.append("<a href='#target-profile'>target profile</a>")
        profiled = flame.profile_section(view.profile, view.profile_overhead)
    links += ["<a href='#summary'>table</a>", "<a href='#provenance'>provenance</a>"]
    body = (
        header(view)
        + verdict_section(view.verdict, view.cards)
        + f"<nav>{' '.join(links)}</nav>"
        + "<p class='hint'>Charts: drag across a time chart to zoom all of them, double-click "
        "to zoom out; click a legend entry to hide its line.</p>"
        + _overview(view, out, x)
        + "".join(_op_sections(view, out, x))
        + _resource_section(view, out, x)
        + with_flames(profiled)
        + _tables(view)
        + "<h2 id='provenance'>provenance</h2>"
        + table(["key", "value"], view.provenance)
    )
    return document(f"protobench {view.id}", body, out, span, view.marks)
