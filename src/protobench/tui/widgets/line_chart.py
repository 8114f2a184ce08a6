"""A braille line graph with its scale, time axis and legend; redraws at most twice a second."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from protobench.tui.braille import nice_top, plot
from protobench.tui.display import Display

REDRAW = 0.5
LABEL_WIDTH = 7


@dataclass(frozen=True)
class Series:
    """One line: its legend label, values (one per interval, oldest first) and colour."""

    label: str
    values: tuple[float, ...]
    style: str


class LineChart(Widget):
    """Lines over time, newest at the right; the y scale is rounded (1/2/2.5/5 × 10^k).

    :meth:`show` takes the series from a :class:`Display` with the function
    given at construction; new data is drawn at most once per ``redraw``
    seconds (a timer draws the newest data when a redraw was held back).
    """

    DEFAULT_CLASSES = "panel"

    def __init__(
        self,
        select: Callable[[Display], list[Series]],
        label: Callable[[float], str],
        redraw: float = REDRAW,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.select = select
        self.label = label
        self.redraw = redraw
        self.series: list[Series] = []
        self.interval = 1.0
        self.draws = 0
        self._last = 0.0
        self._timer: Timer | None = None

    def show(self, display: Display) -> None:
        self.series = self.select(display)
        info = display.view.info
        self.interval = info.interval if info is not None else 1.0
        wait = self._last + self.redraw - time.monotonic()
        if wait <= 0:
            self._redraw()
        elif self._timer is None:
            self._timer = self.set_timer(wait, self._redraw)

    def _redraw(self) -> None:
        self._timer = None
        self._last = time.monotonic()
        self.refresh()

    def render(self) -> Text:
        self.draws += 1
        width, height = self.content_size.width, self.content_size.height
        plot_width = max(4, width - LABEL_WIDTH - 1)
        plot_height = max(1, height - 2)
        points = plot_width * 2
        visible = [s.values[-points:] for s in self.series]
        top = nice_top(max((max(v, default=0.0) for v in visible), default=0.0))
        rows = plot(visible, plot_width, plot_height, top)
        out = Text(no_wrap=True, overflow="crop")
        for number, row in enumerate(rows):
            if number == 0:
                tick = self.label(top)
            elif number == plot_height // 2 and plot_height > 2:
                tick = self.label(top / 2)
            elif number == plot_height - 1:
                tick = "0"
            else:
                tick = ""
            out.append(f"{tick:>{LABEL_WIDTH}}┤" if tick else " " * LABEL_WIDTH + "│", "dim")
            for owner, cells in itertools.groupby(row, key=lambda cell: cell[1]):
                text = "".join(char for char, _ in cells)
                out.append(text, self.series[owner].style if owner is not None else "")
            out.append("\n")
        span = max((len(v) for v in visible), default=0) * self.interval
        left = f"-{span:.0f}s" if span else ""
        out.append(" " * LABEL_WIDTH + "└", "dim")
        out.append(f"{left}{'now':>{max(0, plot_width - len(left))}}\n", "dim")
        for series in self.series:
            last = series.values[-1] if series.values else 0.0
            out.append("━━ ", series.style)
            out.append(f"{series.label} {self.label(last)}  ")
        return out
