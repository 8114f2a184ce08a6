"""The target's top functions over the last profile chunk (``run --profile-target``).

Shown in the overview's side column while the run samples its target, hidden
otherwise. Each chunk (about 2 s; perf: 1 s) replaces the list: self and
total share of the chunk's running samples, and how much of it the target
spent waiting. After the run, the whole sustain phase's top functions (the
report's summary). The monitor shows names through ``termtext`` (its Display).
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.engine.stacks.model import FunctionShare
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel

SHOWN = 8
"""Functions listed."""


def _lines(top: list[FunctionShare], waiting: float) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(f"waiting {waiting:.0%} · self  total  function\n", "dim")
    rows = [f for f in top if f.self_samples][:SHOWN]
    if not rows:
        out.append("no running sample in this chunk", "dim")
    for number, item in enumerate(rows):
        if number:
            out.append("\n")
        out.append(f"{item.self_share:6.1%} {item.total_share:6.1%}  ", "bold")
        out.append(item.function)
    return out


class TargetTop(Panel):
    """Where the target spent its time: the last chunk's top functions, or the run's."""

    def key(self, display: Display) -> object:
        view = display.view
        return view.profile, view.report is not None

    def shape(self, display: Display) -> object:
        return self.key(display)

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        summary = view.report.target_profile if view.report is not None else None
        self.display = summary is not None or view.profile is not None
        if summary is not None:
            self.border_title = f"target · {summary.tool} · sustain"
            return _lines(summary.top, summary.idle_share)
        if view.profile is None:
            return ""
        update = view.profile
        self.border_title = f"target · {update.tool} · last {update.seconds:.0f}s"
        waiting = 1 - update.running / update.samples if update.samples else 0.0
        return _lines(update.top, waiting)
