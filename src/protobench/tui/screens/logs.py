"""The run's log files (workers, target), newest lines last (``l``).

A log line may quote a server (an error text) and a file can hold anything:
every line, name and path is shown made visible (:mod:`protobench.termtext`),
as plain text, never markup.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Footer, Log, OptionList, Static
from textual.widgets.option_list import Option

from protobench.termtext import visible

TAIL_LINES = 1000


def tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a file, made visible (empty if it cannot be read)."""
    try:
        with path.open(errors="replace", newline="\n") as handle:
            return [visible(line.rstrip("\r\n")) for line in deque(handle, maxlen=lines)]
    except OSError:
        return []


class LogsScreen(ModalScreen[None]):
    """A list of log files and the tail of the chosen one; ``r`` reloads it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,l,q", "close", "Close"),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, log_dir: Path | None) -> None:
        super().__init__()
        self.log_dir = log_dir
        self.files = sorted(log_dir.glob("*.log")) if log_dir and log_dir.is_dir() else []
        self.chosen: Path | None = self.files[0] if self.files else None

    def compose(self) -> ComposeResult:
        if not self.files:
            where = visible(str(self.log_dir or "none kept"))
            yield Static(Text(f"No log files for this run ({where})."), id="empty")
        else:
            with Horizontal(id="logs"):
                names = (Option(Text(visible(p.name)), id=str(p)) for p in self.files)
                yield OptionList(*names, id="files")
                yield Log(id="log", highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        self.action_reload()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.chosen = Path(str(event.option.id))
        self.action_reload()

    def action_reload(self) -> None:
        if self.chosen is None:
            return
        log = self.query_one("#log", Log)
        log.border_title = Text(visible(str(self.chosen)))
        log.clear()
        log.write_lines(tail(self.chosen) or ["(empty)"])

    def action_close(self) -> None:
        self.dismiss(None)
