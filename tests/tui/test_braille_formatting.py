"""The braille plotter and the short number formats."""

from __future__ import annotations

import pytest

from protobench.tui import formatting
from protobench.tui.braille import BRAILLE_BASE, nice_top, plot


def dots(rows: list[list[tuple[str, int | None]]]) -> int:
    return sum(bin(ord(c) - BRAILLE_BASE).count("1") for row in rows for c, _ in row if c != " ")


def test_a_flat_line_is_one_dot_per_column_on_the_bottom_row() -> None:
    rows = plot([[0.0] * 8], 4, 2, 10.0)
    assert len(rows) == 2
    assert all(len(row) == 4 for row in rows)
    assert "".join(c for c, _ in rows[0]) == "    "
    assert "".join(c for c, _ in rows[1]) == "⣀⣀⣀⣀"
    assert dots(rows) == 8


def test_a_jump_is_joined_by_a_vertical_run() -> None:
    rows = plot([[0.0, 10.0]], 1, 2, 10.0)
    # Column 0 at the bottom, column 1 joined from the bottom to the top: 1 + 8 dots.
    assert dots(rows) == 9


def test_few_values_stretch_over_the_width_and_owners_are_kept() -> None:
    rows = plot([[1.0, 1.0], [5.0]], 6, 1, 10.0)
    assert all(c != " " for c, _ in rows[0])
    assert {owner for _, owner in rows[0]} <= {0, 1}


@pytest.mark.parametrize(
    ("value", "top"),
    [(0.0, 1.0), (0.3, 0.5), (1.0, 1.0), (1.5, 2.0), (2.2, 2.5), (7.0, 10.0), (12_345.0, 20_000.0)],
)
def test_nice_top(value: float, top: float) -> None:
    assert nice_top(value) == pytest.approx(top)


def test_formats() -> None:
    assert formatting.latency(None) == "-"
    assert formatting.latency(1234.0) == "1.23ms"
    assert formatting.rate(950) == "950"
    assert formatting.rate(12_345) == "12.3k"
    assert formatting.rate(1_050_000) == "1.05M"
    assert formatting.size(512) == "512B"
    assert formatting.size(3.5 * 2**20) == "3.5MiB"
    assert formatting.clock(75) == "1:15"
    assert formatting.clock(3725) == "1:02:05"
    assert formatting.delta(110.0, 100.0) == "+10%"
    assert formatting.delta(97.0, 100.0) == "-3.0%"
    assert formatting.delta(None, 1.0) == ""
