"""The keys that act now, in one line that fits the terminal (help always at its end).

Textual's footer gives each key a widget and cuts the line where the
terminal ends; this bar is one line of text: the screen's active bindings
in their order (a group's keys together: ``+- rate``), as many as fit
whole, then ``? Help``, so that an 80-column terminal still says how to get
the others. It redraws when the bindings change.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import RenderResult
from textual.screen import Screen
from textual.widget import Widget

KEY_STYLE = "bold #ffa62b"
"""The keys' colour (Textual's footer keys')."""


class KeyBar(Widget):
    """One line of ``key Description`` pairs, the screen's enabled bindings that fit."""

    DEFAULT_CSS = """
    KeyBar {
        height: 1;
        dock: bottom;
        background: $footer-background;
    }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _changed(self, screen: Screen[object]) -> None:
        if screen is self.screen:
            self.refresh()

    def keys(self) -> list[tuple[str, str]]:
        """``(keys, description)`` of each enabled, shown binding; a group's keys merged."""
        out: list[tuple[str, str]] = []
        groups: dict[str, int] = {}
        seen: set[str] = set()
        for _, binding, enabled, _ in self.screen.active_bindings.values():
            if not binding.show or not enabled or binding.action in seen:
                continue
            seen.add(binding.action)
            shown = self.app.get_key_display(binding)
            group = binding.group
            if group is None:
                out.append((shown, binding.description))
            elif group.description in groups:
                at = groups[group.description]
                out[at] = (out[at][0] + shown, group.description)
            else:
                groups[group.description] = len(out)
                out.append((shown, group.description))
        return out

    def render(self) -> RenderResult:
        width = self.content_size.width
        pairs = self.keys()
        help_pair = next((p for p in pairs if p[1] == "Help"), None)
        rest = [p for p in pairs if p is not help_pair]
        tail = _cell(*help_pair) if help_pair is not None else Text()
        line = Text(no_wrap=True, overflow="crop")
        for pair in rest:
            cell = _cell(*pair)
            if line.cell_len + cell.cell_len + tail.cell_len > width:
                break
            line.append_text(cell)
        line.append_text(tail)
        return line


def _cell(key: str, description: str) -> Text:
    cell = Text()
    cell.append(f" {key} ", KEY_STYLE)
    cell.append(f"{description} ")
    return cell
