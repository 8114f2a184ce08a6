"""Errors by code over the run, as a histogram: one bar per ``class:code``, the most first."""

from __future__ import annotations

from collections import Counter

from rich.console import RenderableType
from rich.text import Text

from protobench.engine.figures import error_keys
from protobench.tui import formatting
from protobench.tui.charts import scope_note
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel

LABEL_WIDTH = 24


def code_counts(display: Display) -> Counter[str]:
    """Errors per ``class:code`` (a bare class where they had no code) of the ops the
    focus or filter shows (all: the total's)."""
    view = display.view
    scopes = (
        [view.total]
        if display.focus is None and not display.filter and view.total is not None
        else [op for op in view.ops if display.shows(op.name)]
    )
    counts: Counter[str] = Counter()
    for scope in scopes:
        counts.update(error_keys(scope.errors_by_class, scope.error_codes))
    return counts


class ErrorCodes(Panel):
    """A bar per error code (``protocol:503``, ``timeout``...) with its count and share;
    as many as the panel's height holds, the rest summed in one line."""

    SIZED = True

    def render_display(self, display: Display) -> RenderableType:
        counts = code_counts(display)
        total = sum(counts.values())
        self.border_title = f"errors by code · {formatting.count(total)}{scope_note(display)}"
        if not total:
            return Text("no errors", "green")
        rows = self.content_size.height or len(counts)
        ranked = counts.most_common()
        shown = ranked if len(ranked) <= rows else ranked[: max(1, rows - 1)]
        label = min(LABEL_WIDTH, max(len(code) for code, _ in shown))
        width = self.content_size.width - label - 18  # the bar's room (none when narrow)
        peak = shown[0][1]
        out = Text(no_wrap=True, overflow="crop")
        for number, (code, n) in enumerate(shown):
            if number:
                out.append("\n")
            out.append(f"{code[:label]:<{label}} ", "bold red")
            if width >= 4:
                bar = max(1, round(width * n / peak))
                out.append("█" * bar, "red")
                out.append(" " * (width - bar))
            out.append(f" {formatting.count(n):>9} {n / total:6.1%}")
        if len(shown) < len(ranked):
            rest = ranked[len(shown) :]
            out.append(
                f"\n{len(rest)} more codes: {formatting.count(sum(n for _, n in rest))}", "dim"
            )
        return out
