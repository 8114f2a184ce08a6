"""The latency distribution of the last window: log-spaced ranges with bars."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel

Bins = list[tuple[float, float, int]]


def halve(bins: Bins) -> Bins:
    """Merge neighbouring ranges pairwise (log-spaced ranges stay log-spaced)."""
    merged = []
    for i in range(0, len(bins) - 1, 2):
        (low, _, a), (_, high, b) = bins[i], bins[i + 1]
        merged.append((low, high, a + b))
    if len(bins) % 2:
        merged.append(bins[-1])
    return merged


class LatencyDistribution(Panel):
    """How the last window's latencies of all operations spread (share of each range).

    The model gives 16 log-spaced ranges; they are merged pairwise until they
    fit the panel's height.
    """

    SIZED = True

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        key = "uncorrected" if display.latency_key else "corrected"
        self.border_title = f"distribution · last {view.window_seconds:.0f}s · all operations"
        bins = list(view.distribution.get(key) or view.distribution.get("corrected", ()))
        while len(bins) > max(4, self.content_size.height):
            bins = halve(bins)
        total = sum(count for _, _, count in bins)
        if not total:
            return Text("no latencies yet", "dim")
        width = max(10, self.content_size.width - 36)
        peak = max(count for _, _, count in bins)
        out = Text(no_wrap=True, overflow="crop")
        for low, high, count in bins:
            share = count / total
            label = f"{formatting.latency(low)}–{formatting.latency(high)}"
            out.append(f"{label:>17} ")
            bar = round(width * count / peak) if peak else 0
            out.append("█" * bar, "cyan")
            out.append(" " * (width - bar))
            out.append(f" {share:6.1%} {count:>7}\n", "dim" if count == 0 else "")
        out.rstrip()
        return out
