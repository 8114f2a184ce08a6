"""Latency percentiles per operation for the last window or the whole phase, with a baseline."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.model import OpStats
from protobench.tui.widgets.panel import Panel

COLUMNS = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max"))


class LatencyTable(Panel):
    """One row per operation and a total; a dim baseline row under each when one is set.

    ``scope`` is ``window`` (the last 10 s) or ``phase`` (the whole measured
    phase); corrected or uncorrected figures follow the display's toggle.
    """

    def __init__(self, scope: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.scope = scope

    def shape(self, display: Display) -> object:
        return len(display.view.ops), display.baseline is not None

    def title(self, display: Display) -> str:
        view = display.view
        where = (
            f"last {view.window_seconds:.0f}s"
            if self.scope == "window"
            else f"whole {view.measured_phase or 'phase'}"
        )
        mode = ""
        if view.info is not None and view.info.open_model:
            mode = " · uncorrected" if display.latency_key else " · corrected"
        return f"latency · {where}{mode}"

    def render_display(self, display: Display) -> RenderableType:
        self.border_title = self.title(display)
        view = display.view
        table = Table(
            box=box.SIMPLE_HEAD, expand=True, pad_edge=False, padding=(0, 1), show_edge=False
        )
        table.add_column("op", ratio=2, min_width=8, no_wrap=True, overflow="ellipsis")
        table.add_column("ops/s", justify="right", no_wrap=True)
        for _, header in COLUMNS:
            table.add_column(header, justify="right", no_wrap=True)
        rows = [*view.ops, *([view.total] if view.total is not None and len(view.ops) > 1 else [])]
        for stats in rows:
            self._add(table, display, stats)
        if not rows:
            table.add_row(Text("waiting for the first interval…", "dim"))
        return table

    def _add(self, table: Table, display: Display, stats: OpStats) -> None:
        key = self.scope + display.latency_key
        figures = stats.latency.get(key) or stats.latency.get(self.scope, {})
        rate = stats.throughput if self.scope == "window" else stats.phase_throughput
        style = "bold" if stats.name == "total" else ""
        table.add_row(
            Text(
                stats.name
                if stats.latency_kind == "round_trip"
                else f"{stats.name} · {stats.latency_kind}",
                style,
            ),
            Text(formatting.rate(rate), style),
            *(Text(formatting.latency(figures.get(k)), style) for k, _ in COLUMNS),
        )
        baseline = display.baseline
        if baseline is None:
            return
        base = baseline.figures(stats.name, corrected=not display.latency_key)
        base_rate = baseline.throughput.get(stats.name)
        cells = [Text(formatting.latency(base.get(k)), "grey50") for k, _ in COLUMNS]
        table.add_row(
            Text("  ↳ base", "grey50"),
            Text(formatting.rate(base_rate) if base_rate is not None else "-", "grey50"),
            *cells,
        )
