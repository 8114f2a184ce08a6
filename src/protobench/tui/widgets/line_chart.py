"""A braille line graph with scale, time axis, marks and legend; redrawn at most twice a second."""

from __future__ import annotations

import bisect
import itertools
import math
import time
from collections.abc import Callable, Sequence

from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from protobench.tui.braille import nice_top, plot
from protobench.tui.charts import Chart, Series
from protobench.tui.display import Display

REDRAW = 0.5
LABEL_WIDTH = 7
SHRINK = 0.4
"""The y scale shrinks only once every visible value is below this share of it."""
MARK_LABELS = {
    "warmup": "W",
    "sustain": "S",
    "drain": "D",
    "pause": "P",
    "resume": "R",
    "rate": "×",
}


def _mean(values: Sequence[float]) -> float:
    """The mean of the values that are numbers (NaN when none is)."""
    numbers = [v for v in values if not math.isnan(v)]
    return sum(numbers) / len(numbers) if numbers else math.nan


def coarsen(values: Sequence[float], span: int) -> list[float]:
    """Means of ``span`` consecutive values, aligned on the newest (the timescale)."""
    if span <= 1:
        return list(values)
    start = len(values) % span
    head = [_mean(values[:start])] if start else []
    return head + [_mean(values[i : i + span]) for i in range(start, len(values), span)]


def highest(values: Sequence[float]) -> float:
    """The highest value that is a number (0 when none is)."""
    return max((v for v in values if not math.isnan(v)), default=0.0)


def legend(series: Sequence[Series], label: Callable[[float], str], width: int) -> Text:
    """``━━ name value`` for each series (its newest value), wrapped onto as many lines as
    ``width`` needs."""
    out = Text(no_wrap=True, overflow="crop")
    used = 0
    for item in series:
        last = next((v for v in reversed(item.values) if not math.isnan(v)), None)
        text = f"{item.label} {label(last) if last is not None else '-'}  "
        if used and used + 3 + len(text) > width:
            out.append("\n")
            used = 0
        out.append("━━ ", item.style)
        out.append(text)
        used += 3 + len(text)
    return out


class LineChart(Widget):
    """Lines over time, newest at the right; the y scale is rounded (1/2/2.5/5 × 10^k).

    :meth:`show` takes the chart (its title and lines) from a :class:`Display`
    with the function given at construction; new data is drawn at most once per ``redraw``
    seconds (a timer draws the newest data when a redraw was held back). The
    scale grows at once and shrinks only when the lines fall well below it,
    so it does not jump; ``marked`` charts show the run's marks (phase starts,
    pauses, rate changes) on the time axis. The display's ``span`` averages
    that many intervals per point (a longer timescale).
    """

    DEFAULT_CLASSES = "panel"

    def __init__(
        self,
        select: Callable[[Display], Chart],
        label: Callable[[float], str],
        redraw: float = REDRAW,
        *,
        marked: bool = False,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.select = select
        self.label = label
        self.redraw = redraw
        self.marked = marked
        self.series: list[Series] = []
        self.interval = 1.0
        self.span = 1
        self.times: tuple[float, ...] = ()
        self.marks: tuple[tuple[float, str], ...] = ()
        self.top = 0.0
        self.draws = 0
        self._last = 0.0
        self._timer: Timer | None = None

    def show(self, display: Display) -> None:
        chart = self.select(display)
        self.series = chart.series
        self.border_title = chart.title
        info = display.view.info
        self.interval = info.interval if info is not None else 1.0
        self.span = display.span
        if self.marked:
            self.times, self.marks = display.view.times, display.view.marks
        self.border_subtitle = self.timescale()
        wait = self._last + self.redraw - time.monotonic()
        if wait <= 0:
            self._redraw()
        elif self._timer is None:
            self._timer = self.set_timer(wait, self._redraw)

    def timescale(self) -> str:
        """``last 120s`` (``· 4 intervals a point``): the time the chart spans now."""
        points = max(4, self.content_size.width - LABEL_WIDTH - 1) * 2
        values = max((len(s.values) for s in self.series), default=0)
        shown = min(-(-values // self.span), points)
        seconds = shown * self.span * self.interval
        scale = f" · {self.span} intervals a point" if self.span > 1 else ""
        return f"last {seconds:.0f}s{scale}" if seconds else ""

    def _redraw(self) -> None:
        self._timer = None
        self._last = time.monotonic()
        self.refresh()

    def scale(self, highest: float) -> float:
        """The y scale for a chart whose highest visible value is ``highest``."""
        wanted = nice_top(highest)
        if wanted > self.top or highest < self.top * SHRINK:
            self.top = wanted
        return self.top

    def render(self) -> Text:
        self.draws += 1
        width, height = self.content_size.width, self.content_size.height
        plot_width = max(4, width - LABEL_WIDTH - 1)
        key = legend(self.series, self.label, width)
        plot_height = max(1, height - 2 - key.plain.count("\n"))
        points = plot_width * 2
        visible = [coarsen(s.values, self.span)[-points:] for s in self.series]
        top = self.scale(max((highest(v) for v in visible), default=0.0))
        rows = plot(visible, plot_width, plot_height, top)
        out = Text(no_wrap=True, overflow="crop")
        drawn = any(not math.isnan(v) for line in visible for v in line)
        for number, row in enumerate(rows):
            if not drawn:  # no value yet: no scale to read
                tick = ""
            elif number == 0:
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
        shown = max((len(v) for v in visible), default=0)
        axis = ["─"] * plot_width
        for column, mark in self._mark_columns(shown, plot_width):
            axis[column] = mark
        out.append(" " * LABEL_WIDTH + "└", "dim")
        out.append("".join(axis) + "\n", "dim")
        out.append_text(key)
        return out

    def _mark_columns(self, shown: int, plot_width: int) -> list[tuple[int, str]]:
        """Where each mark falls on the time axis (columns of the plot), when visible."""
        if not self.marks or not self.times or not shown:
            return []
        total = len(coarsen(self.times, self.span))
        first = total - shown
        out = []
        for elapsed, kind in self.marks:
            index = bisect.bisect_left(self.times, elapsed - 1e-6)
            point = (len(self.times) - 1 - index) // self.span
            position = total - 1 - point - first
            if 0 <= position < shown and index < len(self.times):
                column = position * plot_width * 2 // shown // 2
                out.append((min(column, plot_width - 1), MARK_LABELS.get(kind, "│")))
        return out
