"""The comparison page of ``protobench diff BASE NEW --report FILE``.

Per operation and ``TOTAL``: the base and new runs' throughput, p50 and p99
over time overlaid (each run from its own start), and their sustain percentile
spectra on one chart; above them ``diff``'s own table as the terminal prints
it, with its significance marks (``~``: no significant change) and warnings;
below them, when both sides sampled their target, the differential flame graph
(:func:`~protobench.htmlreport.flame.diff_flame`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from bokeh.models import ColumnDataSource

from protobench.engine.stacks.model import ShareChange, merged
from protobench.htmlreport import charts, flame
from protobench.htmlreport.page import Charts, document, grid, table, with_flames
from protobench.htmlreport.view import RunView


def _runs(views: Sequence[RunView], side: str) -> list[tuple[str, RunView]]:
    return [(f"{side} {view.id}", view) for view in views]


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
    diff_text: str,
    changes: Sequence[ShareChange] | None = None,
) -> str:
    """Base and new runs overlaid, with the comparison table ``diff_text`` (diff's output)
    and, when both sides sampled their target, the ``changes`` of its functions' shares."""
    runs = _runs(base, "base") + _runs(new, "new")
    out = Charts()
    x_range = charts.time_range([op for _, view in runs for op in view.ops], [])
    names = list(dict.fromkeys(op.name for _, view in runs for op in view.ops))
    sections = []
    for index, name in enumerate(names):
        sources: list[tuple[str, ColumnDataSource]] = []
        spectra = []
        for label, view in runs:
            for op, spec in zip(view.ops, view.spectra, strict=True):
                if op.name == name:
                    sources.append((label, charts.op_source(op)))
                    if spec.corrected:
                        spectra.append((label, spec.corrected))
        cells = [
            out.cell(
                f"cmp{index}-throughput",
                charts.overlay(f"{name}: ok/s", "ok/s", "ok", sources, x_range),
            ),
            out.cell(
                f"cmp{index}-p50",
                charts.overlay(f"{name}: p50", "µs", "p50", sources, x_range, y_log=True),
            ),
            out.cell(
                f"cmp{index}-p99",
                charts.overlay(f"{name}: p99", "µs", "p99", sources, x_range, y_log=True),
            ),
        ]
        if spectra:
            title = f"{name}: percentile spectrum (sustain)"
            cells.append(out.cell(f"cmp{index}-spectrum", charts.spectrum(title, spectra)))
        notes = [] if spectra else ["no latency recorded in sustain"]
        sections.append(grid(f"cmp{index}", name, cells, notes))
    rows = [
        [label, view.title, dict(view.verdicts).get("generator_bound", "-")] for label, view in runs
    ]
    body = (
        "<h1>protobench comparison</h1>"
        + table(["run", "profile", "generator_bound"], rows)
        + f"<h2>diff</h2><pre>{html.escape(diff_text)}</pre>"
        + "".join(sections)
        + profile_changes(base, new, changes)
    )
    return document("protobench comparison", body, out.figures)
