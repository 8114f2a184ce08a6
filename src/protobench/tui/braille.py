"""Line graphs drawn with braille characters (2×4 dots per terminal cell).

:func:`plot` is pure: it takes series of numbers and a size in cells and
returns rows of ``(character, series index)`` cells, so the widget only adds
colours. Each series spans the whole width: its newest values, one per dot
column, or each value stretched over several columns when there are fewer
values than columns; consecutive columns are joined by a vertical run of dots
so a steep change stays a connected line. A NaN value (no sample) draws no
dot and breaks the line. Where series overlap, the one drawn last owns the
cell's colour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BRAILLE_BASE = 0x2800
# Dot bits by (column, row) inside a cell, rows counted from the top.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

Cell = tuple[str, int | None]


def plot(
    series: Sequence[Sequence[float]], width: int, height: int, top: float
) -> list[list[Cell]]:
    """Draw ``series`` in a ``width`` × ``height`` cell grid scaled to 0..``top``."""
    width, height = max(1, width), max(1, height)
    bits = [[0] * width for _ in range(height)]
    owner: list[list[int | None]] = [[None] * width for _ in range(height)]
    dots_x, dots_y = width * 2, height * 4
    scale = (dots_y - 1) / top if top > 0 else 0.0
    for number, values in enumerate(series):
        shown = list(values)[-dots_x:]
        previous: int | None = None
        for x in range(dots_x if shown else 0):
            value = shown[x * len(shown) // dots_x]
            if math.isnan(value):
                previous = None
                continue
            y = round(min(max(value, 0.0), top) * scale)
            low, high = (y, y) if previous is None else (min(y, previous), max(y, previous))
            for dot_y in range(low, high + 1):
                row = dots_y - 1 - dot_y
                cell_row, cell_col = row // 4, x // 2
                bits[cell_row][cell_col] |= _DOTS[x % 2][row % 4]
                owner[cell_row][cell_col] = number
            previous = y
    return [
        [(chr(BRAILLE_BASE + bits[r][c]) if bits[r][c] else " ", owner[r][c]) for c in range(width)]
        for r in range(height)
    ]


def nice_top(value: float) -> float:
    """The smallest 1 / 2 / 2.5 / 5 × 10^k at or above ``value`` (the chart's scale)."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0):
        if step * magnitude >= value * (1 - 1e-9):
            return step * magnitude
    return 10 * magnitude
