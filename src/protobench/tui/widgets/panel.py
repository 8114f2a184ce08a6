"""The base of the monitor's text panels: a Static that renders part of a Display."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import RenderResult
from textual.widgets import Static

from protobench.tui.display import Display


class Panel(Static):
    """A region of the screen; :meth:`show` renders the newest :class:`Display`.

    Every widget that shows run data carries the ``panel`` class, so a screen
    refreshes the panels of the visible view only.
    """

    DEFAULT_CLASSES = "panel"
    SIZED = False
    """True for panels whose content depends on their size: built when drawn."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._display: Display | None = None

    def show(self, display: Display) -> None:
        if self.SIZED:
            self._display = display
            self.refresh()
        else:
            self.update(self.render_display(display))

    def render(self) -> RenderResult:
        if self.SIZED:
            return "" if self._display is None else self.render_display(self._display)
        return super().render()

    def render_display(self, display: Display) -> RenderableType:
        raise NotImplementedError
