"""Errors by class per operation, with the last message of each class."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel


class ErrorTable(Panel):
    """One row per (operation, error class): count, share and the last message seen."""

    def __init__(self, *, compact: bool, id: str | None = None) -> None:
        super().__init__(id=id)
        self.compact = compact

    def key(self, display: Display) -> object:
        ops = display.view.ops
        rates = tuple(round(op.error_rate, 4) for op in ops) if not self.compact else ()
        return tuple((op.name, tuple(op.errors_by_class.items())) for op in ops), rates

    def shape(self, display: Display) -> object:
        return tuple(len(op.errors_by_class) for op in display.view.ops)

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        total_errors = sum(sum(op.errors_by_class.values()) for op in view.ops)
        self.border_title = f"errors · {total_errors} in the run"
        if not total_errors:
            return Text("no errors", "green")
        table = Table(
            box=box.SIMPLE_HEAD, expand=True, pad_edge=False, padding=(0, 1), show_edge=False
        )
        table.add_column("op", no_wrap=True, overflow="ellipsis", max_width=16)
        table.add_column("class", no_wrap=True)
        table.add_column("count", justify="right", no_wrap=True)
        if not self.compact:
            table.add_column("phase err%", justify="right", no_wrap=True)
        table.add_column("last message", ratio=1, no_wrap=self.compact, overflow="ellipsis")
        for op in view.ops:
            for cls, count in sorted(op.errors_by_class.items(), key=lambda kv: -kv[1]):
                cells = [Text(op.name), Text(cls, "bold red"), Text(str(count))]
                if not self.compact:
                    cells.append(Text(f"{op.error_rate:.2%}"))
                message = op.last_errors.get(cls, "-").removeprefix(f"{cls}: ")
                cells.append(Text(message, "dim"))
                table.add_row(*cells)
        return table
