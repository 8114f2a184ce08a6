"""Pick a saved snapshot to compare the run with (``b``): profile, date, ops/s and p99.

The list shows the snapshots of the run's profile (``a`` shows every
profile's); each line names the profile and the date from the snapshot's id at
once, and its sustain ops/s and p99, read off the UI thread, as they come.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from protobench.snapshots.store import SUFFIX, SnapshotError, read, safe_name
from protobench.termtext import visible
from protobench.tui import formatting

CLEAR = "__clear__"
SHOWN = 50


def id_of(path: Path) -> str:
    return path.name.removesuffix(SUFFIX)


def profile_of(run_id: str) -> str:
    """The (safe) profile name inside a run id ``YYYYMMDD-HHMMSS-<profile>-xxxx``."""
    return run_id[16:-5] if len(run_id) > 21 else run_id


def date_of(run_id: str) -> str:
    """``2026-11-25 00:41`` from the id's UTC stamp."""
    stamp = run_id[:15]
    if len(stamp) < 15 or not stamp[:8].isdigit():
        return "?"
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}"


def line(run_id: str, figures: str = "…") -> str:
    return f"{date_of(run_id)}  {profile_of(run_id):<24} {figures:>26}  {run_id}"


class BaselinePicker(ModalScreen[Path | str | None]):
    """Newest first; answers a path, :data:`CLEAR`, or ``None`` (cancelled)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,b", "cancel", "Cancel"),
        Binding("a", "all_profiles", "All profiles"),
    ]

    def __init__(self, paths: list[Path], current: str | None, profile: str | None = None) -> None:
        super().__init__()
        self.all_paths = list(reversed(paths))
        self.current = current
        self.profile = safe_name(profile) if profile else None
        self.everything = self.profile is None
        self.figures: dict[str, str] = {}

    @property
    def paths(self) -> list[Path]:
        shown = [
            p for p in self.all_paths if self.everything or profile_of(id_of(p)) == self.profile
        ]
        return shown[:SHOWN]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.heading(), id="heading")
            yield OptionList(*self.options(), id="snapshots")
            yield Static(self.empty(), id="empty")

    def heading(self) -> str:
        which = "every profile" if self.everything else f"profile {self.profile} (a: every profile)"
        return f"Baseline to compare with · {which} · enter picks, escape cancels"

    def options(self) -> list[Option]:
        options = []
        if self.current:
            options.append(Option(Text(f"no baseline (remove {visible(self.current)})"), id=CLEAR))
        for path in self.paths:
            run_id = id_of(path)
            shown = visible(line(run_id, self.figures.get(run_id, "…")))  # a file's name
            options.append(Option(Text(shown), id=str(path)))
        return options

    def empty(self) -> str:
        return "" if self.paths else "No snapshots of this profile in the store (a: all profiles)."

    def on_mount(self) -> None:
        self.read_figures()

    def refill(self) -> None:
        listing = self.query_one("#snapshots", OptionList)
        listing.clear_options()
        listing.add_options(self.options())
        listing.highlighted = 0 if listing.option_count else None
        self.query_one("#heading", Static).update(self.heading())
        self.query_one("#empty", Static).update(self.empty())

    @work(thread=True, exclusive=True)
    def read_figures(self) -> None:
        """Each snapshot's sustain ops/s and p99 (a thread: snapshots are gzip files)."""
        worker = get_current_worker()
        for path in self.all_paths[: SHOWN * 2]:
            if worker.is_cancelled:
                return
            run_id = id_of(path)
            try:
                sustain = read(path).report.sustain
            except SnapshotError:
                figures = "unreadable"
            else:
                total = sustain.total if sustain else None
                rate = formatting.per_second(total.throughput if total else 0.0)
                p99 = formatting.latency(total.latency_us.p99 if total else None)
                figures = f"{rate} ops/s  p99 {p99}"
            self.app.call_from_thread(self.show_figures, path, run_id, figures)

    def show_figures(self, path: Path, run_id: str, figures: str) -> None:
        self.figures[run_id] = figures
        if not self.is_attached:
            return
        listing = self.query_one("#snapshots", OptionList)
        if any(p == path for p in self.paths):
            listing.replace_option_prompt(str(path), line(run_id, figures))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        choice = event.option.id
        self.dismiss(CLEAR if choice == CLEAR else Path(str(choice)))

    def action_all_profiles(self) -> None:
        self.everything = not self.everything
        self.refill()

    def action_cancel(self) -> None:
        self.dismiss(None)
