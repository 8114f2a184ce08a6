"""Latency over time: p50 and p99 of the total or the focused op, p99.9 when there is room."""

from __future__ import annotations

from protobench.tui.charts import Chart, latency_chart, latency_tick
from protobench.tui.display import Display
from protobench.tui.widgets.line_chart import REDRAW, LineChart

TAIL_ROWS = 14
"""From this height (rows inside the border) the chart draws p99.9 too."""


class LatencyChart(LineChart):
    """A :class:`LineChart` of :func:`~protobench.tui.charts.latency_chart` that adds p99.9
    when it is at least :data:`TAIL_ROWS` tall."""

    def __init__(self, redraw: float = REDRAW, *, id: str | None = None) -> None:
        super().__init__(self.chart, latency_tick, redraw, marked=True, id=id)

    def chart(self, display: Display) -> Chart:
        return latency_chart(display, tail=self.content_size.height >= TAIL_ROWS)
