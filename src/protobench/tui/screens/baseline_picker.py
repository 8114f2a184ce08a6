"""Pick a saved snapshot to overlay on the run (``b``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from protobench.snapshots.store import SUFFIX

CLEAR = "__clear__"
SHOWN = 50


class BaselinePicker(ModalScreen[Path | str | None]):
    """Newest snapshots first; answers a path, :data:`CLEAR`, or ``None`` (cancelled)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,b", "cancel", "Cancel")]

    def __init__(self, paths: list[Path], current: str | None) -> None:
        super().__init__()
        self.paths = list(reversed(paths))[:SHOWN]
        self.current = current

    def compose(self) -> ComposeResult:
        options = []
        if self.current:
            options.append(Option(f"no baseline (remove {self.current})", id=CLEAR))
        for path in self.paths:
            options.append(Option(path.name.removesuffix(SUFFIX), id=str(path)))
        with Vertical(id="dialog"):
            yield Static("Baseline snapshot to compare with (enter picks, escape cancels)")
            if options:
                yield OptionList(*options, id="snapshots")
            else:
                yield Static("No snapshots in the store yet.", id="empty")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        choice = event.option.id
        self.dismiss(CLEAR if choice == CLEAR else Path(str(choice)))

    def action_cancel(self) -> None:
        self.dismiss(None)
