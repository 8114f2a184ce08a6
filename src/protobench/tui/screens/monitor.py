"""The main screen: header, the verdict banner, five views, the footer; one layout per size.

The screen takes one of four layouts from the terminal's size (:func:`layout_of`),
as a class the stylesheet reads (``app.tcss``):

- ``-tiny`` (from :data:`MIN_WIDTH` × :data:`MIN_HEIGHT`, 60×20): the header, the
  throughput and errors/s chart, p50/p99 per op (the total first), the keys;
- ``-compact`` (from 80×24): the same with p95 and p99.9, the thresholds and the
  verdict banner;
- ``-standard`` (from 120×36): beside them the resources and thresholds, and
  the latency over time, the counters, the errors;
- ``-large`` (from 180×50): the two charts side by side, errors by code and
  their rate over time.

Below the minimum the views give way to a line that says how large the
terminal is. The overview and the summary are built with the screen; the other
views (latency, errors, resources) the first time they are shown, so the first
frame does not wait for them. Only the panels of the visible view are
refreshed.
"""

from __future__ import annotations

from typing import Protocol

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

from protobench.tui import charts
from protobench.tui.display import Display
from protobench.tui.widgets.counter_table import CounterTable
from protobench.tui.widgets.error_codes import ErrorCodes
from protobench.tui.widgets.error_table import ErrorTable
from protobench.tui.widgets.key_bar import KeyBar
from protobench.tui.widgets.latency_chart import LatencyChart
from protobench.tui.widgets.latency_distribution import LatencyDistribution
from protobench.tui.widgets.latency_table import LatencyTable
from protobench.tui.widgets.line_chart import LineChart
from protobench.tui.widgets.notice_log import NoticeLog
from protobench.tui.widgets.resource_meters import ResourceMeters
from protobench.tui.widgets.run_header import RunHeader
from protobench.tui.widgets.run_summary import RunSummary
from protobench.tui.widgets.target_top import TargetTop
from protobench.tui.widgets.threshold_list import ThresholdList
from protobench.tui.widgets.verdict_banner import VerdictBanner

MIN_WIDTH = 60
MIN_HEIGHT = 20
LAYOUTS = ("tiny", "compact", "standard", "large")
VIEWS = ("overview", "latency", "errors", "resources", "summary")


def layout_of(width: int, height: int) -> str | None:
    """The layout for a terminal of ``width`` × ``height`` (None: below the minimum)."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return None
    if width < 80 or height < 24:
        return "tiny"
    if width < 120 or height < 36:
        return "compact"
    if width < 180 or height < 50:
        return "standard"
    return "large"


class Shows(Protocol):
    def show(self, display: Display) -> None: ...


class MonitorScreen(Screen[None]):
    """The monitor: switch views with 1..4; the summary shows when the run ends."""

    def __init__(self, chart_refresh: float) -> None:
        super().__init__()
        self.chart_refresh = chart_refresh
        self.display_state: Display | None = None
        self.layout_name: str | None = None
        self.building: set[str] = set()
        """Views being built (their first switch), not yet mounted."""

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield VerdictBanner(id="verdict")
        with ContentSwitcher(initial="overview", id="views"):
            with Horizontal(id="overview"):
                with Vertical(classes="main"):
                    with Horizontal(id="overview-charts"):
                        yield LineChart(
                            charts.throughput_chart,
                            charts.ops_per_second,
                            self.chart_refresh,
                            marked=True,
                            id="throughput",
                        )
                        yield LatencyChart(self.chart_refresh, id="latency-chart-now")
                    yield LatencyTable("window", id="latency-now")
                    yield ThresholdList(id="thresholds-main")
                    yield CounterTable(id="counters-now")
                    yield ErrorTable(compact=True, id="errors-now")
                with Vertical(classes="side"):
                    yield ResourceMeters(id="resources-now")
                    yield ThresholdList(id="thresholds")
                    yield TargetTop(id="target-top")
                    yield ErrorCodes(id="codes-now")
                    yield LineChart(
                        charts.error_code_chart,
                        charts.ops_per_second,
                        self.chart_refresh,
                        id="code-chart-now",
                    )
            with Vertical(id="summary"):
                yield RunSummary(id="run-summary")
        yield Static(id="too-small")
        yield KeyBar()

    def build(self, view: str) -> Widget:
        """The container of ``view`` (latency, errors, resources), built when first shown."""
        if view == "latency":
            return Vertical(
                LatencyChart(self.chart_refresh, id="latency-over-time"),
                LatencyTable("window", id="latency-window"),
                LatencyTable("phase", id="latency-phase"),
                LatencyDistribution(id="distribution"),
                id="latency",
            )
        if view == "errors":
            return Vertical(
                ErrorTable(compact=False, id="errors-all"),
                Horizontal(
                    ErrorCodes(id="codes"),
                    LineChart(
                        charts.error_code_chart,
                        charts.ops_per_second,
                        self.chart_refresh,
                        marked=True,
                        id="code-chart",
                    ),
                    id="codes-row",
                ),
                NoticeLog(id="notices"),
                id="errors",
            )
        if view == "resources":
            return Horizontal(
                Vertical(
                    ResourceMeters(id="resources-all"),
                    TargetTop(id="target-top-all"),
                    id="resources-side",
                ),
                LineChart(charts.cpu_chart, charts.percent, self.chart_refresh, id="cpu"),
                id="resources",
            )
        raise ValueError(f"no view {view!r} to build")

    @property
    def current(self) -> str:
        return self.query_one("#views", ContentSwitcher).current or "overview"

    def show(self, display: Display) -> None:
        """Render ``display`` in the header, the banner and the visible view."""
        self.display_state = display
        self.query_one(RunHeader).show(display)
        self.query_one(VerdictBanner).show(display)
        for panel in self.query_one(f"#{self.current}").query(".panel"):
            if panel.display or isinstance(panel, TargetTop):  # it shows itself when sampled
                shows: Shows = panel  # type: ignore[assignment]
                shows.show(display)

    def switch(self, view: str) -> None:
        """Show another view (built the first time), rendered once its panels have a size."""
        switcher = self.query_one("#views", ContentSwitcher)
        if switcher.query_children(f"#{view}"):
            switcher.current = view
            self._show_later()
        elif view not in self.building:
            self.building.add(view)
            self.call_later(self._build_and_show, view)

    async def _build_and_show(self, view: str) -> None:
        await self.query_one("#views", ContentSwitcher).add_content(
            self.build(view), set_current=True
        )
        self.building.discard(view)
        self._show_later()

    def _show_later(self) -> None:
        if self.display_state is not None:
            self.call_after_refresh(self.show, self.display_state)

    def on_resize(self, event: events.Resize) -> None:
        width, height = event.size.width, event.size.height
        layout = layout_of(width, height)
        self.layout_name = layout
        for name in LAYOUTS:
            self.set_class(layout == name, f"-{name}")
        self.set_class(layout is None, "-too-small")
        self.query_one("#too-small", Static).update(
            f"The terminal is {width}×{height}; the monitor needs at least "
            f"{MIN_WIDTH}×{MIN_HEIGHT}.\nEnlarge the window or use a smaller font. "
            "The run goes on: q still stops it and saves the snapshot."
        )
        self._show_later()
