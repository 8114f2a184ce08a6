"""The header: profile, protocol, target, load model, workers, phase progress, badges.

Three lines that never wrap: a narrow terminal crops them, and the progress
bar shrinks so the time and the badges stay on screen.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from protobench.engine.figures import run_seconds
from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel

PHASE_STYLES = {
    "warmup": "bold yellow",
    "sustain": "bold green",
    "drain": "bold blue",
    "finished": "bold",
    "starting": "bold",
}
BAR_WIDTH = 28
NARROW = 100
"""Below this width the bar is shorter and the target's kind is left out."""


def load_model(display: Display) -> str:
    """``closed model · 50 sessions``, ``open model · 5k/s · 64 sessions``, or after a
    live change ``open model · 5.5k/s (base 5k/s +10%) · 64 sessions``."""
    info = display.view.info
    if info is None:
        return ""
    if info.open_model and info.rate is not None:
        factor = display.view.rate_factor
        text = f"open model · {formatting.rate(info.rate * factor)}/s"
        if abs(factor - 1.0) > 1e-9:
            text += f" (base {formatting.rate(info.rate)}/s {formatting.share_change(factor)})"
        if info.ramp_to is not None:
            text += f" ramp to {formatting.rate(info.ramp_to * factor)}/s"
        return f"{text} · {info.sessions} sessions"
    return f"closed model · {info.sessions} sessions"


class RunHeader(Panel):
    """Three lines: what runs against what, the load, the phase and its progress."""

    def key(self, display: Display) -> object:
        view = display.view
        return (
            view.info,
            view.state,
            view.phase,
            int(view.elapsed),
            view.paused,
            view.rate_factor,
            view.generator_bound,
            view.host_saturated,
            view.report.stop_reason if view.report else None,
            display.stopping,
            display.playback,
            display.baseline.id if display.baseline else None,
            int(display.waited) if view.info is None else 0,
            display.focus,
            display.filter,
            tuple(t.expr for t in view.thresholds if t.ok is False),
            self.content_size.width,
        )

    def render_display(self, display: Display) -> RenderableType:
        info = display.view.info
        narrow = 0 < self.content_size.width < NARROW
        title = Text.assemble(("protobench ", "bold"), no_wrap=True, overflow="crop")
        if info is None:
            title.append("starting: target and workers are coming up… ", "italic")
            title.append(f"{display.waited:.0f}s", "dim")
            return Group(title, Text(""), self._progress(display))
        title.append(info.profile, "bold cyan")
        title.append(f" · {info.protocol} → {info.target}")
        if not narrow:
            title.append(f" ({info.target_kind})", "dim")
        load = Text(load_model(display), no_wrap=True, overflow="crop")
        load.append(f" · {info.workers} worker process{'es' if info.workers != 1 else ''}")
        if info.sessions_failed:
            load.append(f" · {info.sessions_failed} sessions failed to open", "bold red")
        if display.playback is not None:
            play = display.playback
            load.append(f" · REPLAY ×{play.speed:g}", "bold magenta")
        return Group(title, load, self._progress(display))

    def _progress(self, display: Display) -> Text:
        view, info = display.view, display.view.info
        if view.state == "finished":
            phase = "finished"
        elif info is None:
            phase = "starting"
        else:
            phase = view.phase or "starting"
        line = Text(f"{phase.upper():<9}", PHASE_STYLES.get(phase, "bold"))
        line.no_wrap, line.overflow = True, "crop"
        width = self.content_size.width
        bar = BAR_WIDTH if not 0 < width < NARROW else max(6, min(BAR_WIDTH, width - 44))
        if info is not None and info.requests is not None:
            return self._counted(display, line, info.requests, bar)
        total = (info.warmup + info.duration) if info else 0.0
        elapsed = min(view.elapsed, total) if total else 0.0
        if view.report is not None:
            elapsed = min(run_seconds(view.report), total) if total else 0.0
        done = round(bar * elapsed / total) if total else 0
        line.append("━" * done, PHASE_STYLES.get(phase, "bold"))
        line.append("━" * (bar - done), "grey30")
        line.append(f" {formatting.clock(elapsed)} / {formatting.clock(total)}")
        if view.state == "running" and total:
            line.append(f" · {formatting.clock(total - elapsed)} left", "dim")
        for text, style in self._badges(display):
            line.append("  ")
            line.append(f" {text} ", style)
        return line

    def _counted(self, display: Display, line: Text, requests: int, bar: int) -> Text:
        """The progress of a run that a request count ends: exchanges ended of the count."""
        view = display.view
        total = view.total
        ended = total.ok + total.errors if total and view.measured_phase == "sustain" else 0
        done = min(bar, round(bar * ended / requests))
        line.append("━" * done, PHASE_STYLES.get(view.phase or "", "bold"))
        line.append("━" * (bar - done), "grey30")
        line.append(f" {ended:,} / {requests:,} requests · {formatting.clock(view.elapsed)}")
        for text, style in self._badges(display):
            line.append("  ")
            line.append(f" {text} ", style)
        return line

    def _badges(self, display: Display) -> list[tuple[str, str]]:
        view = display.view
        badges = []
        if display.playback is not None and display.playback.paused:
            badges.append(("PLAYBACK PAUSED", "reverse magenta"))
        if view.paused:
            badges.append(("LOAD PAUSED", "reverse yellow"))
        if display.stopping and view.state != "finished":
            badges.append(("STOPPING · SAVING", "reverse yellow"))
        if view.generator_bound:
            badges.append(("GENERATOR-BOUND", "reverse bold red"))
        if view.host_saturated:
            badges.append(("HOST-SATURATED", "reverse bold red"))
        if view.report is not None and view.report.partial:
            badges.append((f"PARTIAL: {view.report.stop_reason}", "reverse red"))
        failing = [t.expr for t in view.thresholds if t.ok is False]
        if failing:
            more = f" +{len(failing) - 1}" if len(failing) > 1 else ""
            badges.append((f"✘ {failing[0]}{more}", "reverse bold red"))
        if display.focus is not None:
            badges.append((f"FOCUS {display.focus}", "reverse cyan"))
        elif display.filter:
            badges.append((f"FILTER /{display.filter}/", "reverse cyan"))
        if display.baseline is not None:
            badges.append((f"vs {display.baseline.id[:24]}", "reverse grey50"))
        return badges
