"""The base of the monitor's text panels: a Static that renders part of a Display."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import RenderResult
from textual.widgets import Static

from protobench.tui.display import Display

_NEVER = object()


class Panel(Static):
    """A region of the screen; :meth:`show` renders the newest :class:`Display`.

    Every widget that shows run data carries the ``panel`` class, so a screen
    refreshes the panels of the visible view only. A new layout of the screen
    (the costliest part of a refresh) is asked for only when :meth:`shape`
    changes: what decides the panel's height (its number of rows), not its
    figures; a panel whose :meth:`key` has not changed is not redrawn at all.
    """

    DEFAULT_CLASSES = "panel"
    SIZED = False
    """True for panels whose content depends on their size: built when drawn (a new layout
    is asked for when the panel is as tall as its content)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._display: Display | None = None
        self._shape: object = _NEVER
        self._key: object = _NEVER

    def show(self, display: Display) -> None:
        if self.SIZED:
            self._display = display
            height = self.styles.height
            self.refresh(layout=height is None or height.is_auto)  # its rows may change
            return
        key = self.key(display)
        if key is not None and key == self._key:
            return
        self._key = key
        shape = self.shape(display)
        self.update(self.render_display(display), layout=shape != self._shape)
        self._shape = shape

    def key(self, display: Display) -> object:
        """Everything the content depends on, when cheap to tell: unchanged, no redraw.

        ``None`` (the default) redraws on every display.
        """
        del display
        return None

    def shape(self, display: Display) -> object:
        """What decides the height of the content (default: nothing, a fixed height)."""
        del display
        return None

    def render(self) -> RenderResult:
        if self.SIZED:
            return "" if self._display is None else self.render_display(self._display)
        return super().render()

    def render_display(self, display: Display) -> RenderableType:
        raise NotImplementedError
