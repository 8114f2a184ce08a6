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
from bokeh.models import Model
from bokeh.resources import Resources

from protobench.htmlreport import charts
from protobench.htmlreport.view import RunView

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #222; }
h1 { font-size: 1.4em; margin: .8em 0 .2em; } h2 { font-size: 1.15em; margin: 1.5em 0 .4em; }
nav a { margin-right: 1em; } .meta { color: #666; }
table { border-collapse: collapse; margin: .4em 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 8px; }
.chart { min-height: 240px; } .none { color: #888; padding: 1em; }
.fail { color: #b00; font-weight: bold; } .pass { color: #070; font-weight: bold; }
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


def _chart_or_none(name: str, figures: dict[str, Model], fig: Model | None, empty: str) -> str:
    if fig is None:
        return f'<div class="none">{html.escape(empty)}</div>'
    figures[name] = fig
    return f"{{{{chart {name}}}}}"


def run_page(view: RunView) -> str:
    """The report page of one run."""
    figures: dict[str, Model] = {}
    x_range = charts.time_range(view.ops, view.marks)
    sections = []
    for index, (op, spec) in enumerate(zip(view.ops, view.spectra, strict=True)):
        source = charts.op_source(op)
        cells = [
            _chart_or_none(
                f"op{index}-throughput",
                figures,
                charts.throughput(op, source, x_range, view.marks),
                "",
            ),
            _chart_or_none(
                f"op{index}-latency", figures, charts.latency(op, source, x_range, view.marks), ""
            ),
            _chart_or_none(
                f"op{index}-spectrum",
                figures,
                charts.spectrum(spec) if spec.corrected else None,
                "no latency recorded in sustain",
            ),
            _chart_or_none(
                f"op{index}-errors",
                figures,
                charts.keyed(
                    f"{op.name}: errors by class and code",
                    "error",
                    list(op.errors),
                    source,
                    x_range,
                    view.marks,
                )
                if op.errors
                else None,
                "no errors",
            ),
            _chart_or_none(
                f"op{index}-counters",
                figures,
                charts.keyed(
                    f"{op.name}: protocol counters",
                    "counter",
                    list(op.counters),
                    source,
                    x_range,
                    view.marks,
                )
                if op.counters
                else None,
                "no protocol counters",
            ),
        ]
        sections.append(
            f"<h2 id='op{index}'>{html.escape(op.name)}</h2><div class='grid'>{''.join(cells)}</div>"
        )
    res = view.resources
    resource_cells = []
    if res.t:
        resource_cells.append(
            _chart_or_none("res-cpu", figures, charts.cpu(res, x_range, view.marks), "")
        )
        memory = (
            charts.memory(res, x_range, view.marks) if "rss" in res.target or res.host else None
        )
        resource_cells.append(_chart_or_none("res-memory", figures, memory, "no memory samples"))
        fds = charts.fds(res, x_range, view.marks) if "fds" in res.target else None
        resource_cells.append(_chart_or_none("res-fds", figures, fds, "no target process sampled"))
    else:
        resource_cells.append('<div class="none">no resource samples</div>')
    nav = " ".join(
        [f"<a href='#op{i}'>{html.escape(op.name)}</a>" for i, op in enumerate(view.ops)]
        + ["<a href='#resources'>resources</a>", "<a href='#provenance'>provenance</a>"]
    )
    body = (
        f"<h1>protobench report: {html.escape(view.title)}</h1>"
        f"<div class='meta'>{html.escape(view.id)}</div><nav>{nav}</nav>"
        "<h2 id='summary'>sustain phase</h2>"
        + (
            table(list(view.summary[0]), [list(r.values()) for r in view.summary])
            if view.summary
            else "<p>no sustain phase</p>"
        )
        + "<h2>verdicts</h2>"
        + table(["verdict", "value"], view.verdicts)
        + "<h2>thresholds</h2>"
        + (
            table(list(view.thresholds[0]), [list(t.values()) for t in view.thresholds])
            if view.thresholds
            else "<p>none</p>"
        )
        + (
            "<h2>notices</h2><ul>"
            + "".join(f"<li>{html.escape(n)}</li>" for n in view.notices)
            + "</ul>"
            if view.notices
            else ""
        )
        + "".join(sections)
        + f"<h2 id='resources'>resources</h2><div class='grid'>{''.join(resource_cells)}</div>"
        + "<h2 id='provenance'>provenance</h2>"
        + table(["key", "value"], view.provenance)
    )
    return document(f"protobench {view.id}", body, figures)
