"""The protocols' own counters per operation, live: received, lost, behind, reconnects, down,
HTTP/2's streams in flight per connection."""

from __future__ import annotations

from rich.text import Text

from protobench.engine.figures import BYTES, counter_figures
from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel

WARN = frozenset(
    {"lost", "undelivered", "broker_dropped", "connect_failed", "behind", "late", "down_s"}
)
"""Counters that tell something went wrong: shown in yellow when not zero."""
DELIVERY = ("lost", "duplicated", "out_of_order", "undelivered")
"""A subscriber's delivery counters, kept only once not zero: shown at 0 by an op that
counts ``expected`` messages (an MQTT subscriber), as nothing lost is news too."""


def with_delivery(counters: dict[str, int]) -> dict[str, int]:
    """``counters`` with a subscriber's :data:`DELIVERY` counters at 0 when it has none."""
    return {**dict.fromkeys(DELIVERY, 0), **counters} if "expected" in counters else counters


def counter_text(name: str, value: float) -> Text:
    """``lost 12`` (in yellow when it is a counter of trouble and not zero), ``in/s 1.2MiB``."""
    if name == "down_s":
        shown = f"{value:,.1f}s"
    elif name == "streams/conn":
        shown = f"{value:g}"
    elif name in BYTES.values():
        shown = formatting.size(value)
    else:
        shown = formatting.count(value)
    label = "down" if name == "down_s" else name
    text = Text(f"{label} ", "dim")
    text.append(shown, "bold yellow" if name in WARN and value else "")
    return text


class CounterTable(Panel):
    """One line per op (over the measured phase): every counter its protocol keeps."""

    def key(self, display: Display) -> object:
        ops = display.view.ops
        rows = tuple(
            (op.name, op.late, op.bytes_in, op.bytes_out, tuple(op.counters.items())) for op in ops
        )
        return rows, (display.focus, display.filter)

    def shape(self, display: Display) -> object:
        """The rows the counters take at the panel's width (a long line folds)."""
        width = self.content_size.width
        text = self.render_display(display)
        return len(text.wrap(self.app.console, width)) if width > 0 else text.plain.count("\n")

    def render_display(self, display: Display) -> Text:
        view = display.view
        self.border_title = f"counters · whole {view.measured_phase or 'phase'}"
        out = Text(overflow="fold")
        width = max((len(op.name) for op in view.ops), default=0)
        for op in view.ops:
            if not display.shows(op.name):
                continue
            figures = counter_figures(
                with_delivery(op.counters), op.late, op.bytes_in, op.seconds, op.bytes_out
            )
            if out:
                out.append("\n")
            out.append(f"{op.name:<{width}} ", "bold")
            if not figures:
                out.append("-", "dim")
            for number, (name, value) in enumerate(figures.items()):
                if number:
                    out.append(" · ", "dim")
                out.append_text(counter_text(name, value))
        return out if out else Text("waiting for the first interval…", "dim")
