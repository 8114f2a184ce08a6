"""The ``--ndjson`` stream: one JSON line per event, then the report.

:class:`NdjsonSink` is a sink of the controller (:mod:`protobench.engine.sinks`):
it reads its own bounded buffer and writes each line in a worker thread, so
a consumer that stops reading blocks only that write; meanwhile the oldest
queued ``interval``, ``resources`` and ``profile`` events are dropped (the newest win),
while ``started``, ``phase`` and ``notice`` events never are (a run has
few). Before the report comes one ``ndjson`` notice of how many were left
out; the report is always the last line. A consumer that closes the pipe
ends the stream quietly (stdout then goes to ``/dev/null``, so nothing fails
later).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any, TextIO

import anyio

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ProfileUpdate,
    ResourceSample,
    RunFinished,
    RunStarted,
)
from protobench.engine.report_model import Report, to_plain
from protobench.engine.sinks import Subscription
from protobench.redaction import redact_url, redact_value

NDJSON_TYPES: dict[type, str] = {
    RunStarted: "started",
    PhaseChanged: "phase",
    IntervalUpdate: "interval",
    ResourceSample: "resources",
    ProfileUpdate: "profile",
    Notice: "notice",
}


def event_line(event: Event) -> str | None:
    """One event as a JSON line (histograms left out, the plan and target redacted), or None."""
    kind = NDJSON_TYPES.get(type(event))
    if kind is None:
        return None
    if isinstance(event, IntervalUpdate):
        event = dataclasses.replace(
            event,
            ops={
                name: dataclasses.replace(op, hist=None, hist_uncorrected=None, hist_delay=None)
                for name, op in event.ops.items()
            },
        )
    data = to_plain(event)
    if isinstance(event, RunStarted):
        data["target"] = redact_url(event.target)
        data["plan"] = redact_value(data["plan"])
    return _line({"type": kind, **data})


def report_line(report: Report) -> str:
    """The report as the stream's last line."""
    return _line({"type": "report", **to_plain(report)})


def _line(data: dict[str, Any]) -> str:
    """One JSON line, spaced as the stream always was (``"type": "interval"``)."""
    return json.dumps(data, default=str) + "\n"


class NdjsonSink:
    """The sink that writes events as NDJSON lines; the blocking writes run in a thread."""

    name = "ndjson"

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.broken = False

    async def consume(self, events: Subscription) -> None:
        async for event in events:
            if not self.broken:
                await anyio.to_thread.run_sync(self._emit, event, abandon_on_cancel=True)

    def _emit(self, event: Event) -> None:
        """Serialise and write one event (in a worker thread: both take time off the loop)."""
        line = report_line(event.report) if isinstance(event, RunFinished) else event_line(event)
        if line is None:
            return
        try:
            self.stream.write(line)
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            self.broken = True
            _silence(self.stream)


def _silence(stream: TextIO) -> None:
    """Point a closed pipe's file descriptor at /dev/null, so the final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
