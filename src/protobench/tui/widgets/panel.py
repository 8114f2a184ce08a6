"""The base of the monitor's text panels: a Static that renders part of a Display."""

from __future__ import annotations

from rich.console import RenderableType
from textual.widgets import Static

from protobench.tui.display import Display


class Panel(Static):
    """A region of the screen; :meth:`show` renders the newest :class:`Display`.

    Every widget that shows run data carries the ``panel`` class, so a screen
    refreshes the panels of the visible view only.
    """

    DEFAULT_CLASSES = "panel"

    def show(self, display: Display) -> None:
        self.update(self.render_display(display))

    def render_display(self, display: Display) -> RenderableType:
        raise NotImplementedError
