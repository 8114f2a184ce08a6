"""The monitor application: reads a MetricsSource, renders it, sends the user's commands.

Data flow: the source calls a :class:`Feed` with every event; the feed posts
:class:`ViewUpdated` at most four times a second; :meth:`on_view_updated`
renders the visible view inside ``batch_update``. Keys act on the source
(``pause``, ``set_rate_factor``, ``stop``...) and each command is posted as a
:class:`CommandSent`. The app never exits while a live run is going: ``q``
asks once and stops the run, Ctrl-C stops it at once, a crashed worker or a
dead target is shown and the run goes on; the summary stays on screen until
the user quits, and the snapshot is saved by the engine in every case.
A run that fails outright (it could not start) shows its error in one
readable line (:func:`describe_failure`) and ``q`` then exits with code 3.
A signal from outside (SIGINT, SIGTERM: :mod:`tui.live` catches them and
calls :meth:`MonitorApp.end_on_signal`) stops a live run and exits when its
snapshot is saved, or closes a replay (SIGHUP, the terminal closed, is
handled by :mod:`tui.live` without the screen).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from protobench.engine.report_model import Report, report_to_json
from protobench.snapshots.store import SUFFIX, SnapshotError, SnapshotStore
from protobench.termtext import visible, visible_tree
from protobench.tui import formatting
from protobench.tui.baseline import Baseline
from protobench.tui.display import Display, Playback
from protobench.tui.feed import REFRESH, Feed
from protobench.tui.messages import BaselineChosen, CommandSent, NoticeShown, RunEnded, ViewUpdated
from protobench.tui.model import empty_view
from protobench.tui.screens.baseline_picker import CLEAR, BaselinePicker
from protobench.tui.screens.confirm import ConfirmScreen
from protobench.tui.screens.help import HelpScreen
from protobench.tui.screens.logs import LogsScreen
from protobench.tui.screens.monitor import MonitorScreen
from protobench.tui.screens.op_filter import OpFilter
from protobench.tui.source import MetricsSource, ReplaySource
from protobench.tui.view import RunView, is_alert
from protobench.tui.widgets.line_chart import REDRAW
from protobench.vocab.exceptions import ExitCode

RATE_STEP = 0.1
VIEWS = Binding.Group("views", compact=True)
RATE = Binding.Group("rate", compact=True)
SPEED = Binding.Group("speed", compact=True)
SEEK = Binding.Group("seek", compact=True)
SCALE = Binding.Group("timescale", compact=True)
MAX_SPAN = 16


class MonitorApp(App[int]):
    """The live monitor (and the replay viewer: the same screens on a snapshot)."""

    CSS_PATH = "app.tcss"
    TITLE = "protobench"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "stop", "Stop"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "interrupt", "Interrupt", show=False, priority=True),
        Binding("p", "pause", "Pause"),
        Binding("plus,equals_sign", "rate(1)", "+", group=RATE),
        Binding("minus", "rate(-1)", "-", group=RATE),
        Binding("plus,equals_sign", "speed(2)", "+", group=SPEED),
        Binding("minus", "speed(0.5)", "-", group=SPEED),
        Binding("left", "seek(-10)", "-10s", group=SEEK),
        Binding("right", "seek(10)", "+10s", group=SEEK),
        Binding("up", "select(-1)", "op", show=False),
        Binding("down", "select(1)", "op", show=False),
        Binding("enter", "focus_op", "Focus", show=False),
        Binding("escape", "unfocus", "All ops", show=False),
        Binding("slash", "filter_ops", "Filter"),
        Binding("left_square_bracket", "timescale(0.5)", "[", group=SCALE),
        Binding("right_square_bracket", "timescale(2)", "] time", group=SCALE),
        Binding("t", "toggle_corrected", "Corrected"),
        Binding("b", "baseline", "Baseline"),
        Binding("1", "view('overview')", "overview", group=VIEWS),
        Binding("2", "view('latency')", "latency", group=VIEWS),
        Binding("3", "view('errors')", "errors", group=VIEWS),
        Binding("4", "view('resources')", "resources", group=VIEWS),
        Binding("5", "view('summary')", "Summary"),
        Binding("l", "logs", "Logs"),
        Binding("s", "save_report", "JSON"),
        Binding("question_mark", "help", "Help"),
    ]

    def __init__(
        self,
        source: MetricsSource,
        store: SnapshotStore | None = None,
        *,
        refresh: float = REFRESH,
        chart_refresh: float = REDRAW,
        speed: float = 1.0,
        baseline: Baseline | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.store = store
        self.feed = Feed(self.post_message, refresh)
        self.view: RunView = empty_view()
        self.corrected = True
        self.baseline: Baseline | None = baseline
        self.rate_factor = 1.0
        self.speed = speed
        self.load_paused = False
        self.playback_paused = False
        self.stopping = False
        self.finished = False
        self.exit_when_finished = False
        self.mounted = False
        self.error: str | None = None
        self.failure: BaseException | None = None
        """What ended a replay's source (a snapshot that fails its check), raised after."""
        self.selected: str | None = None
        self.focus: str | None = None
        self.op_filter = ""
        self.span = 1
        self.monitor = MonitorScreen(chart_refresh)
        self.launched = time.monotonic()

    @property
    def replay(self) -> bool:
        return self.source.kind == "replay"

    async def on_mount(self) -> None:
        await self.push_screen(self.monitor)
        self.render_view()
        self.set_interval(1.0, self._tick_while_starting)
        self.run_worker(self.source.run(self.feed), name="source", exit_on_error=False)
        self.mounted = True
        if self.exit_when_finished:  # a signal came while the monitor was loading
            self.action_interrupt()

    def _tick_while_starting(self) -> None:
        """Count the seconds while the target and workers come up (no events yet)."""
        if self.view.state == "starting" and self.error is None:
            self.render_view()

    def display_now(self) -> Display:
        """What the panels render now, every string in it made visible (a target's error
        texts, a snapshot's names: never a terminal command; line breaks stay in their box)."""
        display = Display(
            view=self.view,
            corrected=self.corrected,
            baseline=self.baseline,
            stopping=self.stopping,
            playback=Playback(self.speed, self.playback_paused) if self.replay else None,
            source=self.source.kind,
            error=self.error,
            waited=time.monotonic() - self.launched,
            focus=self.focus,
            selected=self.selected,
            filter=self.op_filter,
            span=self.span,
        )
        return visible_tree(display, keep_newlines=True)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast of plain text: its words made visible, never read as markup."""
        del markup
        super().notify(
            visible(message, keep_newlines=True),
            title=visible(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def render_view(self) -> None:
        with self.batch_update():
            self.monitor.show(self.display_now())

    def on_view_updated(self, message: ViewUpdated) -> None:
        known = self.view.info
        self.view = message.view
        self.render_view()
        if (
            known is None
            and message.view.info is not None
            and isinstance(self.source, ReplaySource)
        ):
            self.call_after_refresh(self.source.on_screen)
        if known != message.view.info:
            self.refresh_bindings()
            self.warn_other_profile()

    def warn_other_profile(self) -> None:
        """A baseline of another profile compares different things: say so."""
        info, baseline = self.view.info, self.baseline
        if info is not None and baseline is not None and baseline.profile != info.profile:
            self.notify(
                f"the baseline {baseline.id} is of profile {baseline.profile}, "
                f"this run is {info.profile}",
                title="baseline",
                severity="warning",
                timeout=10,
            )

    def on_notice_shown(self, message: NoticeShown) -> None:
        notice = message.notice
        if is_alert(notice):
            self.notify(notice.message, title=notice.kind, severity="error", timeout=10)
        elif not self.replay:
            self.notify(notice.message, title=notice.kind, timeout=3)

    def on_run_ended(self, message: RunEnded) -> None:
        self.finished = True
        self.stopping = False
        self.monitor.switch("summary")
        self.refresh_bindings()
        if self.exit_when_finished:
            self.exit(message.exit_code if message.exit_code is not None else 3)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "source" or event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if self.replay:  # nothing to show: the snapshot is unreadable; the CLI says why
            self.failure = error
            self.exit(0)
            return
        # the controller's module (the whole engine) is loaded by a live run only
        from protobench.engine.controller import describe_failure  # noqa: PLC0415

        self.error = describe_failure(error) if error is not None else "the run failed"
        self.finished = True
        self.notify(self.error, title="engine", severity="error", timeout=30)
        if self.exit_when_finished:
            self.exit(ExitCode.INCOMPLETE)
        self.monitor.switch("summary")
        self.render_view()
        self.refresh_bindings()

    def on_baseline_chosen(self, message: BaselineChosen) -> None:
        self.baseline = message.baseline
        self.render_view()
        if message.baseline is None:
            self.notify("baseline removed", timeout=3)
        else:
            self.notify(f"baseline: {message.baseline.id}", timeout=3)
            self.warn_other_profile()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        controls = self.source.controls
        info = self.view.info
        open_model = info is not None and info.open_model
        running = not self.finished and self.error is None
        if action == "stop":
            return running and "stop" in controls
        if action == "quit":
            return not (running and "stop" in controls)
        if action == "pause":
            return (running and "pause" in controls) or self.replay
        if action == "rate":
            return running and "rate" in controls and open_model
        if action == "speed":
            return "speed" in controls
        if action == "seek":
            return "seek" in controls
        if action == "toggle_corrected":
            return open_model
        if action == "save_report":
            return self.view.report is not None
        if action == "view" and parameters == ("summary",):
            return self.finished
        return True

    def send(self, command: str, value: Any = None) -> None:
        """Send a command to the source and post it (for tests and listeners)."""
        source = self.source
        if command == "pause":
            source.pause()
        elif command == "resume":
            source.resume()
        elif command == "rate":
            source.set_rate_factor(float(value))
        elif command == "speed":
            source.set_speed(float(value))
        elif command == "seek":
            source.seek(float(value))
        elif command == "stop":
            source.stop(str(value))
        self.post_message(CommandSent(command, value))

    def action_stop(self) -> None:
        if self.stopping:
            self.notify("stopping: the snapshot is being saved", timeout=3)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop("stopped")

        self.push_screen(ConfirmScreen("Stop the run now and save the snapshot?"), answered)

    def _stop(self, reason: str) -> None:
        if self.stopping or self.finished:
            return
        self.stopping = True
        self.send("stop", reason)
        self.notify("stopping the run; the snapshot is being saved…", timeout=5)
        self.render_view()
        self.refresh_bindings()

    def action_interrupt(self) -> None:
        if self.finished or "stop" not in self.source.controls:
            self.action_quit_now()
        elif self.stopping:
            self.notify("stopping: the snapshot is being saved", timeout=3)
        else:
            self._stop("interrupted")

    def end_on_signal(self) -> None:
        """SIGINT or SIGTERM: stop a live run and exit once it has ended; close a replay.

        Called by a signal handler, wherever the main thread (the app's) is:
        it only sets a flag and wakes the app's loop, which does the rest.
        """
        self.exit_when_finished = True
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closing: the app is done
                loop.call_soon_threadsafe(self._signalled)

    def _signalled(self) -> None:
        if self.mounted:  # else on_mount does it
            self.action_interrupt()

    async def action_quit(self) -> None:
        """Ctrl+Q and ``q`` after the end: quit, but never lose a live run."""
        if not self.finished and self.error is None and "stop" in self.source.controls:
            self._stop("interrupted")
            return
        self.action_quit_now()

    def action_quit_now(self) -> None:
        code = self.view.exit_code
        if self.error is not None and code is None and not self.replay:
            code = ExitCode.INCOMPLETE
        self.exit(code if code is not None and not self.replay else 0)

    def action_pause(self) -> None:
        if self.replay:
            self.playback_paused = not self.playback_paused
            self.send("pause" if self.playback_paused else "resume")
        else:
            self.load_paused = not self.load_paused
            self.send("pause" if self.load_paused else "resume")
        self.render_view()

    def action_rate(self, direction: int) -> None:
        """Open model: the rate up or down by 10% of the base (the plan's) rate, never below
        10% of it: 20k/s, 22k/s, 24k/s... (an addition, not a compound ×1.1)."""
        self.rate_factor = round(max(RATE_STEP, self.rate_factor + direction * RATE_STEP), 2)
        self.send("rate", self.rate_factor)
        info = self.view.info
        if info is not None and info.rate is not None:
            self.notify(
                f"rate {formatting.rate(info.rate * self.rate_factor)}/s: base "
                f"{formatting.rate(info.rate)}/s {formatting.share_change(self.rate_factor)} "
                "(each + or - is 10% of the base rate)",
                timeout=4,
            )

    def action_speed(self, factor: float) -> None:
        """Replay: playback speed ×2 or ÷2."""
        self.speed = min(max(self.speed * factor, 0.125), 1000.0)
        self.send("speed", self.speed)
        self.notify(f"playback ×{self.speed:g}", timeout=2)
        self.render_view()

    def action_seek(self, seconds: float) -> None:
        self.send("seek", seconds)

    def action_toggle_corrected(self) -> None:
        self.corrected = not self.corrected
        mode = (
            "corrected (from the intended send time)"
            if self.corrected
            else "uncorrected (from the actual send time)"
        )
        self.notify(f"latency: {mode}", timeout=3)
        self.render_view()

    def action_view(self, view: str) -> None:
        self.monitor.switch(view)

    def action_baseline(self) -> None:
        if self.store is None:
            self.notify("no snapshot store to pick a baseline from", severity="warning")
            return

        def picked(choice: Path | str | None) -> None:
            if choice == CLEAR:
                self.post_message(BaselineChosen(None))
            elif isinstance(choice, Path):
                self.load_baseline(choice)

        current = self.baseline.id if self.baseline else None
        profile = self.view.info.profile if self.view.info is not None else None
        self.push_screen(BaselinePicker(self.store.paths(), current, profile), picked)

    @work(thread=True, exclusive=True, group="baseline")
    def load_baseline(self, path: Path) -> None:
        """Read a snapshot off the UI thread and post it as the baseline."""
        assert self.store is not None
        try:
            baseline = Baseline.from_snapshot(self.store.load(str(path)))
        except (SnapshotError, KeyError, TypeError) as exc:
            self.call_from_thread(self.notify, f"cannot use {path.name}: {exc}", severity="error")
            return
        self.post_message(BaselineChosen(baseline))

    def action_logs(self) -> None:
        self.push_screen(LogsScreen(self.source.log_dir))

    def action_save_report(self) -> None:
        report = self.view.report
        if report is None:
            self.notify("the report exists when the run has ended", severity="warning")
            return
        path = Path.cwd() / f"{self.report_name(report)}.report.json"
        try:
            path.write_bytes(report_to_json(report, indent=True) + b"\n")
        except OSError as exc:
            self.notify(f"cannot write {path}: {exc}", severity="error")
            return
        self.notify(f"report written to {path}", timeout=8)

    def listed_ops(self) -> list[str]:
        """The ops the selector moves over (those the filter lets through)."""
        return [op.name for op in self.view.ops if self.op_filter.lower() in op.name.lower()]

    def action_select(self, step: int) -> None:
        ops = self.listed_ops()
        if not ops:
            return
        index = ops.index(self.selected) + step if self.selected in ops else 0
        self.selected = ops[index % len(ops)]
        self.render_view()

    def action_focus_op(self) -> None:
        if self.selected is None:
            self.action_select(1)
        self.focus = self.selected
        self.render_view()

    def action_unfocus(self) -> None:
        self.focus = self.selected = None
        self.op_filter = ""
        self.render_view()

    def action_filter_ops(self) -> None:
        def typed(text: str | None) -> None:
            if text is not None:
                self.op_filter, self.focus = text, None
                if self.selected not in self.listed_ops():
                    self.selected = None
                self.render_view()

        self.push_screen(OpFilter(self.op_filter), typed)

    def action_timescale(self, factor: float) -> None:
        """Intervals per chart point: ×2 or ÷2 (1 to :data:`MAX_SPAN`)."""
        self.span = int(min(max(self.span * factor, 1), MAX_SPAN))
        self.notify(f"chart: {self.span} interval(s) per point", timeout=2)
        self.render_view()

    def report_name(self, report: Report) -> str:
        """The snapshot's id: the replayed one's, else the one this run saved."""
        if isinstance(self.source, ReplaySource) and self.source.snapshot_id:
            return self.source.snapshot_id
        snapshot = Path(report.snapshot or "protobench")
        return snapshot.name.removesuffix(SUFFIX)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())
