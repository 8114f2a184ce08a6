"""What happened during the run: worker failures, a gone target, pauses, rate changes."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from protobench.tui.display import Display
from protobench.tui.view import is_alert
from protobench.tui.widgets.panel import Panel

TAIL_LINES = 4


class NoticeLog(Panel):
    """Notices in order, alerts in red with the tail of the failed worker's log."""

    def key(self, display: Display) -> object:
        return len(display.view.notices)

    def render_display(self, display: Display) -> RenderableType:
        notices = display.view.notices
        self.border_title = f"notices · {len(notices)}"
        if not notices:
            return Text("nothing to report", "dim")
        out = Text()
        for number, notice in enumerate(notices):
            if number:
                out.append("\n")
            out.append(f"{notice.elapsed:7.1f}s ", "dim")
            out.append(f"{notice.kind:<8}", "bold red" if is_alert(notice) else "bold")
            out.append(notice.message, "red" if is_alert(notice) else "")
            tail = str(notice.details.get("log_tail") or "")
            for line in tail.splitlines()[-TAIL_LINES:]:
                out.append(f"\n{'':17}│ {line}", "dim")
        return out
