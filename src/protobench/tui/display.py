"""What the widgets render: the run's view plus the screen's own settings."""

from __future__ import annotations

from dataclasses import dataclass

from protobench.tui.baseline import Baseline
from protobench.tui.view import RunView


@dataclass(frozen=True)
class Playback:
    """How a replay plays: its speed and whether playback is paused."""

    speed: float
    paused: bool


@dataclass(frozen=True)
class Display:
    """One render: the run's view, the baseline, the corrected toggle, the app's state."""

    view: RunView
    corrected: bool = True
    baseline: Baseline | None = None
    stopping: bool = False
    playback: Playback | None = None
    source: str = "live"
    error: str | None = None
    waited: float = 0.0
    """Seconds since the monitor opened (shown while the run is starting)."""
    focus: str | None = None
    """The op the user focused (Enter in the op selector): its chart, percentiles, errors."""
    selected: str | None = None
    """The op under the selector's cursor (up/down)."""
    filter: str = ""
    """Only ops whose name contains this (``/``)."""
    span: int = 1
    """Intervals per chart point (the timescale: ``[`` and ``]``)."""

    def shows(self, op: str) -> bool:
        """Whether the tables list ``op`` (the focus, else the filter, decides)."""
        if self.focus is not None:
            return op == self.focus
        return self.filter.lower() in op.lower()

    @property
    def latency_key(self) -> str:
        """Which latency figures to show: corrected unless toggled in the open model."""
        open_model = self.view.info is not None and self.view.info.open_model
        return "" if self.corrected or not open_model else "_uncorrected"
