"""The generator-bound verdict, loud, shown only when it fires."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel


class VerdictBanner(Panel):
    """A red banner while the generator, not the target, is the bottleneck."""

    def key(self, display: Display) -> object:
        return self.shape(display)

    def shape(self, display: Display) -> object:
        return display.view.generator_bound, display.view.generator_reason

    def show(self, display: Display) -> None:
        self.set_class(display.view.generator_bound, "-active")
        super().show(display)

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        if not view.generator_bound:
            return ""
        text = Text("⚠ GENERATOR-BOUND ", "bold")
        text.append(f"{view.generator_reason or ''}. ")
        text.append("These figures measure protobench, not the target.", "bold")
        return text
