"""The generator-bound and host-saturated verdicts, loud, shown only when one fires."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel


class VerdictBanner(Panel):
    """A red banner while the generator, or a host busy with other processes, is the limit:
    what it means first, then the figures (a short banner, at 80×24, cuts the figures)."""

    def key(self, display: Display) -> object:
        return self.shape(display)

    def shape(self, display: Display) -> object:
        view = display.view
        return view.generator_bound, view.generator_reason, view.host_saturated, view.host_reason

    def show(self, display: Display) -> None:
        view = display.view
        self.set_class(view.generator_bound or view.host_saturated, "-active")
        super().show(display)

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        text = Text()
        if view.generator_bound:
            text.append(
                "⚠ GENERATOR-BOUND: these figures measure protobench, not the target. ", "bold"
            )
            text.append(f"{view.generator_reason or ''}.")
        if view.host_saturated:
            if text:
                text.append("\n")
            text.append("⚠ HOST-SATURATED: these figures measure a starved host. ", "bold")
            text.append(f"{view.host_reason or ''}.")
        return text
