"""The run's thresholds and their live state against the sustain phase so far, and the
generator's own delay in taking up replies (the kernel's clock) beside them."""

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


def delay_line(delay: dict[str, float]) -> Text:
    """``generator delay p50 12µs · p99 85µs``: how long replies waited in the generator after
    the kernel stamped them (not in the latency); empty without the kernel's clock."""
    if not delay.get("count"):
        return Text()
    text = Text("generator delay ", "dim")
    text.append(f"p50 {formatting.latency(delay.get('p50'))}")
    text.append(" · ", "dim")
    text.append(f"p99 {formatting.latency(delay.get('p99'))}")
    return text


class ThresholdList(Panel):
    """✔ passing, ✘ failing, … waiting (no sustain figures yet), – not evaluated (the run
    measured nothing); then the generator's delay, when the kernel's clock timed replies."""

    def key(self, display: Display) -> object:
        view = display.view
        delay = view.total.generator_delay if view.total is not None else {}
        return view.thresholds, view.report is not None, tuple(delay.items())

    def shape(self, display: Display) -> object:
        view = display.view
        delay = view.total.generator_delay if view.total is not None else {}
        return len(view.thresholds), bool(delay.get("count"))

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        listed = self._thresholds(display)
        delay = delay_line(view.total.generator_delay if view.total is not None else {})
        if delay:
            listed.append("\n")
            listed.append_text(delay)
        return listed

    def _thresholds(self, display: Display) -> Text:
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
