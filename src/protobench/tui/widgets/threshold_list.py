"""The run's thresholds and their live state against the sustain phase so far."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel
from protobench.vocab.thresholds import (
    FRACTION_METRICS,
    LATENCY_METRICS,
    format_value,
    parse_threshold,
)


def observed(expr: str, value: float | None) -> str:
    """An observed threshold value in its metric's unit."""
    if value is None:
        return "-"
    metric = parse_threshold(expr).metric
    if metric in LATENCY_METRICS:
        return formatting.latency(value)
    if metric == "throughput":
        return f"{formatting.rate(value)}/s"
    if metric in FRACTION_METRICS:
        return f"{value:.3%}"
    return format_value(metric, value)


class ThresholdList(Panel):
    """✔ passing, ✘ failing, … waiting (no sustain figures yet), – not evaluated (the run
    measured nothing)."""

    def key(self, display: Display) -> object:
        return display.view.thresholds, display.view.report is not None

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        final = view.report is not None
        self.border_title = "thresholds · final" if final else "thresholds · live"
        if not view.thresholds:
            return Text("none set (add --threshold 'p99 < 5ms')", "dim")
        out = Text(no_wrap=True, overflow="ellipsis")
        for number, state in enumerate(view.thresholds):
            if number:
                out.append("\n")
            if state.ok is None:
                out.append("– " if final else "… ", "dim")
                out.append(state.expr, "dim")
                out.append(
                    "  not evaluated: nothing measured" if final else "  waiting for sustain", "dim"
                )
                continue
            out.append("✔ " if state.ok else "✘ ", "bold green" if state.ok else "bold red")
            out.append(state.expr)
            out.append(f"  {observed(state.expr, state.value)}", "green" if state.ok else "red")
        return out
