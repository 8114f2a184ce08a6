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
        style = PHASE_STYLES.get(phase, "bold")
        line = Text(f"{phase.upper():<9}", style)
        line.no_wrap, line.overflow = True, "crop"
        if info is not None and info.requests is not None:
            return self._line(display, line, style, *self._counted(display, info.requests))
        total = (info.warmup + info.duration) if info else 0.0
        elapsed = min(view.elapsed, total) if total else 0.0
        if view.report is not None:
            elapsed = min(run_seconds(view.report), total) if total else 0.0
        figures = f" {formatting.clock(elapsed)} / {formatting.clock(total)}"
        left = ""
        if view.state == "running" and total:
            left = f" · {formatting.clock(total - elapsed)} left"
        return self._line(display, line, style, elapsed / total if total else 0.0, figures, left)

    def _counted(self, display: Display, requests: int) -> tuple[float, str, str]:
        """The progress of a run that a request count ends: exchanges ended of the count."""
        view = display.view
        total = view.total
        ended = total.ok + total.errors if total and view.measured_phase == "sustain" else 0
        figures = f" {ended:,} / {requests:,} requests · {formatting.clock(view.elapsed)}"
        return min(1.0, ended / requests), figures, ""

    def _line(
        self, display: Display, line: Text, style: str, share: float, figures: str, left: str
    ) -> Text:
        """``line`` (the phase) with the bar at ``share``, ``figures``, the time ``left`` and
        the badges. The bar takes what the rest leaves of a narrow terminal (down to 4
        cells), then the time left goes, so the badges (a failing threshold) stay whole."""
        badges = Text()
        for text, badge_style in self._badges(display):
            badges.append("  ")
            badges.append(f" {text} ", badge_style)
        width = self.content_size.width
        bar = BAR_WIDTH
        if 0 < width < NARROW:
            rest = width - line.cell_len - len(figures) - badges.cell_len
            if rest - len(left) < 4:
                left = ""
            bar = max(4, min(BAR_WIDTH, rest - len(left)))
        done = min(bar, round(bar * share))
        line.append("━" * done, style)
        line.append("━" * (bar - done), "grey30")
        line.append(figures)
        line.append(left, "dim")
        line.append_text(badges)
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
