"""Errors per operation by class and code: counts, each class's own share, the last message."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from protobench.engine.figures import error_shares
from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.view import OpStats
from protobench.tui.widgets.panel import Panel


def codes_text(codes: tuple[tuple[str, int], ...]) -> str:
    """``503×1,204 500×3``: a class's codes, most frequent first."""
    return " ".join(f"{code}×{formatting.count(n)}" for code, n in codes)


class ErrorTable(Panel):
    """One row per (operation, error class): count, codes, share, the last message.

    The share is the class's own: its count over all the op's errors.
    ``only`` limits the rows to one operation (the focused one).
    """

    def __init__(self, *, compact: bool, id: str | None = None) -> None:
        super().__init__(id=id)
        self.compact = compact

    def key(self, display: Display) -> object:
        ops = self.rows_of(display)
        return (
            tuple((op.name, tuple(op.errors_by_class.items())) for op in ops),
            display.focus,
            display.filter,
        )

    def shape(self, display: Display) -> object:
        return tuple(len(op.errors_by_class) for op in self.rows_of(display))

    @staticmethod
    def rows_of(display: Display) -> tuple[OpStats, ...]:
        return tuple(op for op in display.view.ops if display.shows(op.name))

    def render_display(self, display: Display) -> RenderableType:
        ops = self.rows_of(display)
        total_errors = sum(sum(op.errors_by_class.values()) for op in ops)
        where = f" of {display.focus}" if display.focus else " in the run"
        self.border_title = Text(f"errors{where} · {formatting.count(total_errors)}")  # not markup
        if not total_errors:
            return Text("no errors", "green")
        table = Table(
            box=box.SIMPLE_HEAD, expand=True, pad_edge=False, padding=(0, 1), show_edge=False
        )
        table.add_column("op", no_wrap=True)
        table.add_column("class", no_wrap=True)
        table.add_column("count", justify="right", no_wrap=True)
        table.add_column("share", justify="right", no_wrap=True)
        table.add_column("codes", no_wrap=True, overflow="ellipsis", max_width=28)
        table.add_column("last message", ratio=1, no_wrap=self.compact, overflow="ellipsis")
        for op in ops:
            for row in error_shares(op.errors_by_class, op.error_codes):
                message = op.last_errors.get(row.cls, "-").removeprefix(f"{row.cls}: ")
                table.add_row(
                    Text(op.name),
                    Text(row.cls, "bold red"),
                    Text(formatting.count(row.count)),
                    Text(f"{row.share:.2%}"),
                    Text(codes_text(row.codes), "red"),
                    Text(message, "dim"),
                )
        return table
