"""The one HTML file of a run's report: tables, charts and Bokeh's JavaScript inlined.

The page needs no network: Bokeh's ``bokeh.min.js`` (from the Python package)
is written into it, and the charts' data sit in one JSON document that every
figure shares. Each chart is a ``<div class="chart" data-chart=NAME>``; the
browser test checks that each one is drawn.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from bokeh.embed import components
from bokeh.models import Model, Range1d
from bokeh.resources import Resources

from protobench.htmlreport import charts, flame
from protobench.htmlreport.view import RunView

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #222; }
h1 { font-size: 1.4em; margin: .8em 0 .2em; } h2 { font-size: 1.15em; margin: 1.5em 0 .4em; }
nav a { margin-right: 1em; } .meta { color: #666; }
table { border-collapse: collapse; margin: .4em 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 8px; }
.chart { min-height: 240px; } .none { color: #888; margin: 0; }
"""


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def document(title: str, body: str, figures: dict[str, Model]) -> str:
    """The whole page: ``body`` with each ``{{chart NAME}}`` replaced by that figure's div."""
    script, divs = components(figures) if figures else ("", {})
    for name, div in divs.items():
        body = body.replace(
            f"{{{{chart {name}}}}}",
            f'<div class="chart" data-chart="{html.escape(name)}">{div}</div>',
        )
    js = Resources(mode="inline", components=["bokeh"]).render_js() if figures else ""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style>{js}</head>"
        f"<body>{body}{script}</body></html>\n"
    )


class Charts:
    """The figures of one page, by name, and the placeholders that stand for them in its body."""

    def __init__(self) -> None:
        self.figures: dict[str, Model] = {}

    def cell(self, name: str, fig: Model | None) -> str:
        """A chart's placeholder ("" when there is nothing to draw)."""
        if fig is None:
            return ""
        self.figures[name] = fig
        return f"{{{{chart {name}}}}}"


def grid(section_id: str, title: str, cells: Sequence[str], notes: Sequence[str] = ()) -> str:
    """A titled section of charts, with one line for what had nothing to draw."""
    note = f"<p class='none'>{html.escape('; '.join(notes))}</p>" if notes else ""
    return (
        f"<h2 id='{section_id}'>{html.escape(title)}</h2>{note}"
        f"<div class='grid'>{''.join(cells)}</div>"
    )


def _op_sections(view: RunView, out: Charts, x_range: Range1d) -> list[str]:
    sections = []
    for index, (op, spec) in enumerate(zip(view.ops, view.spectra, strict=True)):
        source = charts.op_source(op)
        marks = view.marks
        errors = counters = None
        if op.errors:
            title = f"{op.name}: errors by class and code"
            errors = charts.keyed(title, "error", list(op.errors), source, x_range, marks)
        if op.counters:
            title = f"{op.name}: protocol counters"
            counters = charts.keyed(title, "counter", list(op.counters), source, x_range, marks)
        spectrum = charts.run_spectrum(spec) if spec.corrected else None
        latency = None
        if any(v is not None for v in op.latency["max"]):
            latency = charts.latency(op, source, x_range, marks)
        cells = [
            out.cell(f"op{index}-throughput", charts.throughput(op, source, x_range, marks)),
            out.cell(f"op{index}-latency", latency),
            out.cell(f"op{index}-spectrum", spectrum),
            out.cell(f"op{index}-errors", errors),
            out.cell(f"op{index}-counters", counters),
        ]
        notes = [
            text
            for text, fig in (
                ("no successful operation", latency),
                ("no latency recorded in sustain", spectrum),
                ("no errors", errors),
                ("no protocol counters", counters),
            )
            if fig is None
        ]
        sections.append(grid(f"op{index}", op.name, cells, notes))
    return sections


def _resource_section(view: RunView, out: Charts, x_range: Range1d) -> str:
    res = view.resources
    if not res.t:
        return grid("resources", "resources", [], ["no resource samples"])
    memory = charts.memory(res, x_range, view.marks) if "rss" in res.target or res.host else None
    fds = charts.fds(res, x_range, view.marks) if "fds" in res.target else None
    cells = [
        out.cell("res-cpu", charts.cpu(res, x_range, view.marks)),
        out.cell("res-memory", memory),
        out.cell("res-fds", fds),
    ]
    return grid("resources", "resources", cells, [] if fds else ["no target process sampled"])


def _rows_table(rows: Sequence[dict[str, str]], empty: str) -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    return table(list(rows[0]), [list(row.values()) for row in rows])


def _tables(view: RunView) -> str:
    notices = "".join(f"<li>{html.escape(n)}</li>" for n in view.notices)
    return (
        "<h2 id='summary'>sustain phase</h2>"
        + _rows_table(view.summary, "no sustain phase")
        + "<h2>verdicts</h2>"
        + table(["verdict", "value"], view.verdicts)
        + "<h2>thresholds</h2>"
        + _rows_table(view.thresholds, "none")
        + (f"<h2>notices</h2><ul>{notices}</ul>" if notices else "")
    )


def with_flames(section: str) -> str:
    """``section`` with the flame graphs' style and script, when it has one ("" stays "")."""
    if not section:
        return ""
    return f"<style>{flame.STYLE}</style>{section}<script>{flame.SCRIPT}</script>"


def run_page(view: RunView) -> str:
    """The report page of one run."""
    out = Charts()
    x_range = charts.time_range(view.ops, view.marks)
    links = [f"<a href='#op{i}'>{html.escape(op.name)}</a>" for i, op in enumerate(view.ops)]
    links.append("<a href='#resources'>resources</a>")
    profiled = ""
    if view.profile is not None:
        links.append("<a href='#target-profile'>target profile</a>")
        profiled = flame.profile_section(view.profile, view.profile_overhead)
    links.append("<a href='#provenance'>provenance</a>")
    body = (
        f"<h1>protobench report: {html.escape(view.title)}</h1>"
        f"<div class='meta'>{html.escape(view.id)}</div><nav>{' '.join(links)}</nav>"
        + _tables(view)
        + "".join(_op_sections(view, out, x_range))
        + _resource_section(view, out, x_range)
        + with_flames(profiled)
        + "<h2 id='provenance'>provenance</h2>"
        + table(["key", "value"], view.provenance)
    )
    return document(f"protobench {view.id}", body, out.figures)
