"""The main screen: header, the verdict banner, four views and the summary, the footer.

Only the panels of the visible view are refreshed. Below the minimum size
(:data:`MIN_WIDTH` × :data:`MIN_HEIGHT`) the views give way to a message
that says how large the terminal is and how large it should be.
"""

from __future__ import annotations

from typing import Protocol

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static

from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.widgets.counter_table import CounterTable
from protobench.tui.widgets.error_table import ErrorTable
from protobench.tui.widgets.latency_distribution import LatencyDistribution
from protobench.tui.widgets.latency_table import LatencyTable
from protobench.tui.widgets.line_chart import LineChart, Series
from protobench.tui.widgets.notice_log import NoticeLog
from protobench.tui.widgets.resource_meters import ResourceMeters
from protobench.tui.widgets.run_header import RunHeader
from protobench.tui.widgets.run_summary import RunSummary
from protobench.tui.widgets.target_top import TargetTop
from protobench.tui.widgets.threshold_list import ThresholdList
from protobench.tui.widgets.verdict_banner import VerdictBanner

MIN_WIDTH = 100
MIN_HEIGHT = 30
VIEWS = ("overview", "latency", "errors", "resources", "summary")
OP_STYLES = (
    "#56b4e9",
    "#e69f00",
    "#f0e442",
    "#009e73",
    "#cc79a7",
    "#0072b2",
    "#cab2d6",
    "#b2df8a",
    "#b15928",
    "#8dd3c7",
    "#bebada",
    "#a6761d",
)
"""One colour per op, no two alike (Okabe-Ito, then Brewer's paired tones); red is the errors'
line, grey the baseline, white the total. Hex colours: the terminal theme does not remap them."""
ERROR_STYLE = "bold #ff3030"


class Shows(Protocol):
    def show(self, display: Display) -> None: ...


def throughput_series(display: Display) -> list[Series]:
    """Errors/s (red), the baseline's total (grey), each op shown and the total (white).

    Errors come first so the ops' lines are drawn over them; with an op
    focused: its errors/s and that op only.
    """
    view = display.view
    if display.focus is not None:
        errors = view.errors_per_second.get(display.focus, ())
        ops = [n for n in view.throughput if n != "total"]
        style = OP_STYLES[ops.index(display.focus) % len(OP_STYLES)] if display.focus in ops else ""
        focused = view.throughput.get(display.focus, ())
        return [Series("errors", errors, ERROR_STYLE), Series(display.focus, focused, style)]
    series = [Series("errors", view.errors_per_second.get("total", ()), ERROR_STYLE)]
    if display.baseline is not None:
        series.append(Series("baseline", display.baseline.curve_at(view.times), "grey50"))
    ops = [name for name in view.throughput if name != "total"]
    series.extend(
        Series(name, view.throughput[name], OP_STYLES[i % len(OP_STYLES)])
        for i, name in enumerate(ops)
        if display.shows(name)
    )
    if len(ops) > 1 and "total" in view.throughput:
        series.append(Series("total", view.throughput["total"], "bold white"))
    return series


def cpu_series(display: Display) -> list[Series]:
    history = display.view.cpu_history
    return [
        Series("host", history.get("host", ()), "grey62"),
        Series("target", history.get("target", ()), "yellow"),
        Series("busiest worker", history.get("generator", ()), "cyan"),
    ]


def ops_per_second(value: float) -> str:
    return f"{formatting.rate(value)}/s"


def percent(value: float) -> str:
    return f"{value:.0f}%"


class MonitorScreen(Screen[None]):
    """The monitor: switch views with 1..4; the summary shows when the run ends."""

    # Screen declares these as (non-ClassVar) attributes, hence the noqa.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (MIN_WIDTH, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (MIN_HEIGHT, "-tall")]  # noqa: RUF012

    def __init__(self, chart_refresh: float) -> None:
        super().__init__()
        self.chart_refresh = chart_refresh
        self.display_state: Display | None = None

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield VerdictBanner(id="verdict")
        with ContentSwitcher(initial="overview", id="views"):
            with Horizontal(id="overview"):
                with Vertical(classes="main"):
                    yield LineChart(
                        throughput_series,
                        ops_per_second,
                        self.chart_refresh,
                        marked=True,
                        id="throughput",
                    )
                    yield LatencyTable("window", id="latency-now")
                    yield CounterTable(id="counters-now")
                    yield ErrorTable(compact=True, id="errors-now")
                with Vertical(classes="side"):
                    yield ResourceMeters(id="resources-now")
                    yield ThresholdList(id="thresholds")
                    yield TargetTop(id="target-top")
            with Vertical(id="latency"):
                yield LatencyTable("window", id="latency-window")
                yield LatencyTable("phase", id="latency-phase")
                yield LatencyDistribution(id="distribution")
            with Vertical(id="errors"):
                yield ErrorTable(compact=False, id="errors-all")
                yield NoticeLog(id="notices")
            with Horizontal(id="resources"):
                yield ResourceMeters(id="resources-all")
                yield LineChart(cpu_series, percent, self.chart_refresh, id="cpu")
            with Vertical(id="summary"):
                yield RunSummary(id="run-summary")
        yield Static(id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#throughput").border_title = "throughput · ops/s and errors/s"
        self.query_one("#cpu").border_title = "cpu over time · % of one core (host: of all)"

    @property
    def current(self) -> str:
        return self.query_one("#views", ContentSwitcher).current or "overview"

    def show(self, display: Display) -> None:
        """Render ``display`` in the header, the banner and the visible view."""
        self.display_state = display
        self.query_one(RunHeader).show(display)
        self.query_one(VerdictBanner).show(display)
        for panel in self.query_one(f"#{self.current}").query(".panel"):
            shows: Shows = panel  # type: ignore[assignment]
            shows.show(display)

    def switch(self, view: str) -> None:
        """Show another view, rendered once its panels have their size."""
        self.query_one("#views", ContentSwitcher).current = view
        if self.display_state is not None:
            self.call_after_refresh(self.show, self.display_state)

    def on_resize(self, event: events.Resize) -> None:
        width, height = event.size.width, event.size.height
        self.query_one("#too-small", Static).update(
            f"The terminal is {width}×{height}; the monitor needs at least "
            f"{MIN_WIDTH}×{MIN_HEIGHT}.\nEnlarge the window or use a smaller font. "
            "The run goes on: q still stops it and saves the snapshot."
        )
