"""The monitor's test double of a source: scripted events, every command recorded.

:class:`FakeSource` emits a list of events (see :mod:`tests.support.scripted_run`) and
records every command in ``commands``, like ``httpx.MockTransport``. It
answers commands as the controller does (a ``pause`` notice, a ``rate``
notice) and holds ``RunFinished`` back until it is stopped or
:meth:`FakeSource.finish` is called.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from protobench.engine.events import Event, Notice, RunFinished
from protobench.engine.report_model import NoticeEntry
from protobench.tui.source import Emit
from protobench.vocab.exceptions import ExitCode


class FakeSource:
    """Scripted events for tests; every command is recorded in ``commands``."""

    kind = "fake"

    def __init__(
        self,
        events: Sequence[Event],
        *,
        step: float = 0.0,
        hold: bool = True,
        log_dir: Path | None = None,
        controls: frozenset[str] = frozenset({"pause", "rate", "stop"}),
    ) -> None:
        self.events = list(events)
        self.step = step
        self.hold = hold
        self.log_dir = log_dir
        self.controls = controls
        self.commands: list[tuple[str, Any]] = []
        self.noticed: list[NoticeEntry] = []
        """The notices the commands caused (added to the final report, as the engine does)."""
        self.emitted = 0
        self._emit: Emit | None = None
        self._release: asyncio.Event | None = None
        self._stop_reason: str | None = None

    async def run(self, emit: Emit) -> None:
        self._emit = emit
        self._release = asyncio.Event()
        finished = self.events[-1] if isinstance(self.events[-1], RunFinished) else None
        body = self.events[:-1] if finished else self.events
        for event in body:
            if self._stop_reason is not None:
                break
            emit(event)
            self.emitted += 1
            await asyncio.sleep(self.step)
        if finished is None:
            return
        if self.hold and self._stop_reason is None:
            await self._release.wait()
        if self.noticed:  # as the controller: its notices end up in the report
            report = replace(finished.report, notices=[*finished.report.notices, *self.noticed])
            finished = RunFinished(report, finished.exit_code)
        if self._stop_reason is not None:
            report = replace(finished.report, partial=True, stop_reason=self._stop_reason)
            finished = RunFinished(report, ExitCode.INCOMPLETE)
        emit(finished)
        self.emitted += 1

    def finish(self) -> None:
        """Let the held ``RunFinished`` go (the run completed)."""
        if self._release is not None:
            self._release.set()

    def _notice(self, kind: str, message: str, **details: Any) -> None:
        self.noticed.append(NoticeEntry(kind=kind, message=message, elapsed=0.0, details=details))
        if self._emit is not None:
            self._emit(Notice(kind, message, 0.0, details))

    def pause(self) -> None:
        self.commands.append(("pause", None))
        self._notice("pause", "load paused")

    def resume(self) -> None:
        self.commands.append(("resume", None))
        self._notice("resume", "load resumed")

    def set_rate_factor(self, factor: float) -> None:
        self.commands.append(("rate", factor))
        self._notice("rate", f"rate factor {factor:.2f}", factor=factor)

    def set_speed(self, speed: float) -> None:
        self.commands.append(("speed", speed))

    def seek(self, seconds: float) -> None:
        self.commands.append(("seek", seconds))

    def stop(self, reason: str) -> None:
        self.commands.append(("stop", reason))
        self._stop_reason = reason
        self.finish()
