"""Latency percentiles per operation for the last window or the whole phase, with a baseline."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from protobench.tui import formatting
from protobench.tui.baseline import Baseline
from protobench.tui.display import Display
from protobench.tui.view import OpStats
from protobench.tui.widgets.panel import Panel
from protobench.vocab.thresholds import LATENCY_COLUMNS

COLUMNS = LATENCY_COLUMNS
NARROW = frozenset({"p90", "max"})
"""Columns left out when the table is narrower than :data:`WIDE` (the overview)."""
WIDE = 90
TINY = frozenset({"p90", "p95", "p999", "max"})
"""Columns left out when the table is narrower than :data:`SMALL`: p50 and p99 stay."""
SMALL = 60
SMALL_LAYOUTS = ("-tiny", "-compact")
"""The screen's layouts where the total comes first (the rows a small terminal cuts are ops)."""
NAME_WIDTH = 32
"""Op names up to this long are shown whole (longer ones fold onto a second line)."""


def delta_text(
    value: float | None, base: float | None, significant: bool | None, higher_is_better: bool
) -> Text:
    """The change against the baseline, coloured by ``diff``'s test.

    Significant and better: green; significant and worse: red; not
    significant: plain (the change may be noise); untested: dim.
    """
    text = formatting.delta(value, base)
    if not text or value is None or base is None:
        return Text(text)
    if significant is None:
        return Text(text, "dim")
    if not significant:
        return Text(text)
    better = (value > base) == higher_is_better
    return Text(text, "bold green" if better else "bold red")


class LatencyTable(Panel):
    """One row per operation and a total; a baseline row under each when one is set.

    ``scope`` is ``window`` (the last 10 s) or ``phase`` (the whole measured
    phase); corrected or uncorrected figures follow the display's toggle. The
    baseline row shows the change of ops/s and p99, coloured by ``diff``'s
    test on the intervals of both runs.
    """

    def __init__(self, scope: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.scope = scope

    def shape(self, display: Display) -> object:
        shown = sum(display.shows(op.name) for op in display.view.ops)
        return shown, display.baseline is not None, display.selected

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
        focus = f" · {display.focus}" if display.focus else ""
        return f"latency · {where}{mode}{focus}"

    def render_display(self, display: Display) -> RenderableType:
        self.border_title = Text(self.title(display))  # an op's name: not markup
        view = display.view
        small = any(self.screen.has_class(c) for c in SMALL_LAYOUTS)
        table = Table(
            box=None if small else box.SIMPLE_HEAD,
            header_style="bold",
            expand=True,
            pad_edge=False,
            padding=(0, 1),
            show_edge=False,
        )
        shown = [op for op in view.ops if display.shows(op.name)]
        names = max((len(self.name_of(op)) for op in shown), default=8)
        table.add_column("op", min_width=min(max(names, 8), NAME_WIDTH), overflow="fold")
        table.add_column("ops/s", justify="right", no_wrap=True)
        for _, header in self.columns():
            table.add_column(header, justify="right", no_wrap=True)
        total = view.total if view.total is not None and len(shown) == len(view.ops) > 1 else None
        first = total is not None and small
        rows = [*shown, *([total] if total is not None else [])]
        if first:
            rows = rows[-1:] + rows[:-1]
        for stats in rows:
            self._add(table, display, stats)
        if not rows:
            table.add_row(Text("waiting for the first interval…", "dim"))
        return table

    def columns(self) -> tuple[tuple[str, str], ...]:
        """The percentiles that fit: all of them, without p90 and max when narrow, only p50
        and p99 when narrower still."""
        width = self.content_size.width
        if width and width < SMALL:
            return tuple(c for c in COLUMNS if c[0] not in TINY)
        if width and width < WIDE:
            return tuple(c for c in COLUMNS if c[0] not in NARROW)
        return COLUMNS

    @staticmethod
    def name_of(stats: OpStats) -> str:
        kind = stats.latency_kind
        return stats.name if kind == "round_trip" else f"{stats.name} · {kind}"

    def _add(self, table: Table, display: Display, stats: OpStats) -> None:
        key = self.scope + display.latency_key
        figures = stats.latency.get(key) or stats.latency.get(self.scope, {})
        rate = stats.throughput if self.scope == "window" else stats.phase_throughput
        style = "bold" if stats.name == "total" else ""
        name = self.name_of(stats)
        table.add_row(
            Text(name, "reverse" if stats.name == display.selected else style),
            Text(formatting.per_second(rate), style),
            *(Text(formatting.latency(figures.get(k)), style) for k, _ in self.columns()),
        )
        if display.baseline is not None:
            table.add_row(*self._baseline_row(display.baseline, display, stats, rate, figures))

    def _baseline_row(
        self,
        baseline: Baseline,
        display: Display,
        stats: OpStats,
        rate: float,
        figures: dict[str, float],
    ) -> list[Text]:
        base = baseline.figures(stats.name, corrected=not display.latency_key)
        base_rate = baseline.throughput.get(stats.name)
        columns = self.columns()
        cells = [Text(formatting.latency(base.get(k)), "grey62") for k, _ in columns]
        rate_delta = delta_text(
            rate,
            base_rate,
            baseline.significant(stats.name, "throughput", stats.samples.get("throughput", ())),
            higher_is_better=True,
        )
        p99_delta = delta_text(
            figures.get("p99"),
            base.get("p99"),
            baseline.significant(stats.name, "p99", stats.samples.get("p99", ())),
            higher_is_better=False,
        )
        cells[columns.index(("p99", "p99"))] = Text.assemble(
            (formatting.latency(base.get("p99")), "grey62"), " ", p99_delta
        )
        rate_cell = Text.assemble(
            (formatting.per_second(base_rate) if base_rate is not None else "-", "grey62"),
            " ",
            rate_delta,
        )
        return [Text("  ↳ base", "grey62"), rate_cell, *cells]
