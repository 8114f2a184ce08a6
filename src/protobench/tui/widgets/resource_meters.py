"""CPU and memory of each worker, the target and the host; the workers' fds and loop lag."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.engine.bounds import LAG_BOUND_MS
from protobench.engine.events import ProcessSample
from protobench.engine.figures import fds_nearest_limit
from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.widgets.panel import Panel

HOT = 90.0
FDS_HOT = 0.8
"""A worker past this share of its open-file limit is shown in red."""


def meter(percent: float, width: int) -> Text:
    """A bar for a percentage of one core (or of the host): green, yellow, red when hot."""
    fill = round(width * min(max(percent, 0.0), 100.0) / 100)
    style = "red" if percent >= HOT else "yellow" if percent >= 70 else "green"
    text = Text("█" * fill, style)
    text.append("░" * (width - fill), "grey30")
    return text


class ResourceMeters(Panel):
    """Meters of the newest resource sample; dead workers and a gone target in red."""

    def shape(self, display: Display) -> object:
        resources = display.view.resources
        fds = resources is not None and any("fd_limit" in w for w in resources.workers)
        if resources is None:
            return None
        target = "gone" if resources.target_gone else resources.target is not None
        dead = sum(notice.kind == "worker" for notice in display.view.notices)
        return len(resources.workers), dead, target, fds

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        self.border_title = "resources"
        resources = view.resources
        if resources is None:
            return Text("waiting for the first sample…", "dim")
        width = max(6, min(30, (self.content_size.width or 38) - 26))
        out = Text(no_wrap=True, overflow="crop")
        out.append("workers ", "bold")
        out.append("(% of one core)\n", "dim")
        for worker in resources.workers:
            cpu = float(worker.get("cpu", 0.0))
            out.append(f" {worker.get('pid', '?'):>7} ")
            out.append_text(meter(cpu, width))
            out.append(f" {cpu:5.1f}% {formatting.size(worker.get('rss'))}\n")
        for notice in view.notices:
            if notice.kind == "worker":
                exit_code = notice.details.get("exit_code")
                out.append(f" ✘ worker {notice.details.get('worker', '?')} died", "bold red")
                out.append(f" (exit {exit_code})\n" if exit_code is not None else "\n", "red")
        out.append_text(self._target(resources.target, resources.target_gone, width))
        host = resources.host
        out.append("host ", "bold")
        out.append(f"({host.get('cpus', '?')} cores)\n", "dim")
        host_cpu = float(host.get("cpu", 0.0))
        out.append("     cpu ")
        out.append_text(meter(host_cpu, width))
        out.append(f" {host_cpu:5.1f}%\n")
        mem_used, mem_total = host.get("mem_used"), host.get("mem_total")
        out.append(f"     mem {formatting.size(mem_used)} / {formatting.size(mem_total)}\n")
        out.append_text(self._generator(display))
        return out

    def _generator(self, display: Display) -> Text:
        """The workers' open files against their limit and each one's event-loop lag."""
        view = display.view
        resources = view.resources
        out = Text()
        nearest = fds_nearest_limit(resources.workers) if resources is not None else None
        if nearest is not None:
            fds, limit = nearest
            share = fds / limit
            out.append("fds ", "bold")
            style = "bold red" if share >= FDS_HOT else ""
            out.append(f"{formatting.count(fds)}/{formatting.count(limit)} ({share:.0%})", style)
            out.append(" fullest worker\n", "dim")
        out.append("loop lag ", "bold")
        lags = list(view.worker_lag_ms.values()) or [view.lag_ms]
        for number, lag in enumerate(lags):
            if number:
                out.append(" ")
            out.append(f"{lag:.1f}", "bold red" if lag >= LAG_BOUND_MS else "")
        out.append(" ms", "dim")
        out.append(f" · in flight {formatting.count(view.inflight)}", "dim")
        return out

    def _target(self, target: ProcessSample | None, gone: bool, width: int) -> Text:
        out = Text()
        out.append("target ", "bold")
        if gone:
            out.append("process is gone!\n", "bold reverse red")
            return out
        if target is None:
            out.append("(not watched: remote, or give --target-pid)\n", "dim")
            return out
        cpu = float(target.get("cpu", 0.0))
        out.append(f"(pid {target.get('pid')})\n", "dim")
        out.append("     cpu ")
        out.append_text(meter(cpu, width))
        out.append(f" {cpu:5.1f}%\n")
        out.append(f"     rss {formatting.size(target.get('rss'))}")
        out.append(f"  fds {target.get('fds', '-')}  thr {target.get('threads', '-')}\n")
        return out
