"""The keys of the monitor (``?``)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = """\
[b]q[/b]        stop the run and save the snapshot (asks once); after the end: quit
[b]ctrl+c[/b]   stop at once and save; after the end: quit
[b]p[/b]        pause / resume the load (a replay: pause / resume playback)
[b]+ -[/b]      open model: rate up / down by 10% of the base rate (recorded in the
         snapshot: 20k/s → 22k/s → 24k/s); replay: speed ×2 / ÷2
[b]← →[/b]      replay: seek 10 s back / forward
[b]↑ ↓[/b]      select an op; [b]enter[/b] focus it: its chart, percentiles and errors
[b]escape[/b]   every op again (clears the focus and the filter)
[b]/[/b]        show only the ops whose name contains a text
[b]\\[ ][/b]      chart timescale: ÷2 / ×2 intervals per point (1 to 16)
[b]t[/b]        open model: latency corrected for coordinated omission / uncorrected
[b]b[/b]        pick a baseline snapshot to overlay (throughput and percentiles)
[b]1 2 3 4[/b]  views: overview, latency, errors and notices, resources
[b]5[/b]        the summary (after the end)
[b]l[/b]        worker and target logs
[b]s[/b]        write the JSON report (the same as --json) to a file
[b]?[/b]        this help (escape closes)"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("[b]protobench monitor · keys[/b]\n")
            yield Static(KEYS)

    def action_close(self) -> None:
        self.dismiss(None)
