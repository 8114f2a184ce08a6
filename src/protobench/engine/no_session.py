"""Stopping a run early when none of its sessions could ever open.

A run whose every session failed to open at the start (its workers' ``HELLO``:
none opened, some failed) measures nothing while that lasts: its sessions only
retry, and its warmup, sustain and drain run out their planned length for an
exit 3 (a wrong password with ``-d 60s`` cost a minute). :class:`NoSessionWatch`
reads the run's intervals: once :data:`NO_SESSION_SECONDS` have passed with
not one session opened, it gives the reason to stop, on one line (how many
sessions, how many failed opens, the first error the sessions met and how
many times it came); the controller stops the run with ``stop_reason``
:data:`~protobench.engine.report_model.NO_SESSION` and a notice of kind
:data:`~protobench.engine.report_model.NO_SESSION_NOTICE` that says why.
A single session that opens disarms it for the rest of the run.
"""

from __future__ import annotations

from protobench.engine.events import IntervalUpdate
from protobench.engine.schedule import CONNECT_FAILED
from protobench.vocab.counters import CONNECTS

NO_SESSION_SECONDS = 5.0
"""Seconds of load without any session open before the run is stopped."""


class NoSessionWatch:
    """Says when to stop a run that has never had a session open (see the module)."""

    def __init__(self, opened: int, failed: int) -> None:
        self.armed = opened == 0 and failed > 0
        self.sessions = failed
        self.failed_opens = 0
        self.first: tuple[str, str] | None = None
        """The class of the first error the sessions met, and its text (``class: detail``)."""
        self.count = 0
        """How many errors of that class came since."""

    def add(self, update: IntervalUpdate) -> str | None:
        """Take one interval of the run; the reason to stop the run now, or None."""
        if not self.armed:
            return None
        total = update.total
        if total.counters.get(CONNECTS, 0):
            self.armed = False
            return None
        self.failed_opens += total.counters.get(CONNECT_FAILED, 0)
        if self.first is None and total.errors_by_class:
            kind = next(iter(total.errors_by_class))
            self.first = (kind, (total.last_errors or {}).get(kind, ""))
        if self.first is not None:
            self.count += total.errors_by_class.get(self.first[0], 0)
        if update.elapsed < NO_SESSION_SECONDS:
            return None
        self.armed = False
        return self.reason(update.elapsed)

    def reason(self, elapsed: float) -> str:
        """The one line that says why the run stops."""
        line = (
            f"no session could open in {elapsed:.0f} s ({self.sessions} sessions, "
            f"{self.failed_opens} failed opens)"
        )
        if self.first is not None:
            kind, text = self.first
            times = "once" if self.count == 1 else f"{self.count} times"
            line += f"; first error: {' '.join(text.split()) or kind} ({times})"
        return line + "; stopped early"
