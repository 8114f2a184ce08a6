"""The ``--ndjson`` stream: one JSON line per event, written by a thread of its own.

The controller hands each event to :class:`NdjsonStream` and never waits: the
events wait in a bounded queue that a writer thread empties onto stdout. A
consumer that stops reading blocks only that thread; past :data:`LOSSY_LIMIT`
queued ``interval`` and ``resources`` events the oldest of them is dropped
(the newest wins), while ``started``, ``phase`` and ``notice`` events are
never dropped (a run has few). :meth:`NdjsonStream.close` queues a notice of
how many were dropped, then the report, and waits for the writer: the
report is always the last line. A consumer that closes the pipe ends the
stream quietly (stdout then goes to ``/dev/null``, so nothing fails later).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections import deque
from typing import Any, TextIO

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunStarted,
)
from protobench.engine.report_model import Report, to_plain
from protobench.redaction import redact_url, redact_value

NDJSON_TYPES: dict[type, str] = {
    RunStarted: "started",
    PhaseChanged: "phase",
    IntervalUpdate: "interval",
    ResourceSample: "resources",
    Notice: "notice",
}
LOSSY = frozenset({IntervalUpdate, ResourceSample})
LOSSY_LIMIT = 64
"""Queued interval and resource events kept for a slow consumer (a minute of 1 s intervals)."""


def event_line(event: Event) -> str | None:
    """One event as a JSON line (histograms left out, the plan and target redacted), or None."""
    kind = NDJSON_TYPES.get(type(event))
    if kind is None:
        return None
    if isinstance(event, IntervalUpdate):
        event = dataclasses.replace(
            event,
            ops={
                name: dataclasses.replace(op, hist=None, hist_uncorrected=None)
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
    import orjson  # noqa: PLC0415 - not on the --help path

    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str).decode() + "\n"


class NdjsonStream:
    """A subscriber that writes events as NDJSON lines without ever blocking the run."""

    def __init__(self, stream: TextIO | None = None, limit: int = LOSSY_LIMIT) -> None:
        self.stream = stream or sys.stdout
        self.limit = limit
        self.dropped = 0
        self.broken = False
        self._queue: deque[Event | str] = deque()
        self._lossy = 0
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._write, name="protobench-ndjson", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        if type(event) not in NDJSON_TYPES:
            return
        with self._ready:
            if type(event) in LOSSY:
                if self._lossy >= self.limit:
                    self._drop_oldest_lossy()
                self._lossy += 1
            self._queue.append(event)
            self._ready.notify()

    def _drop_oldest_lossy(self) -> None:
        for i, queued in enumerate(self._queue):
            if type(queued) in LOSSY:
                del self._queue[i]
                self._lossy -= 1
                self.dropped += 1
                return

    def close(self, report: Report) -> None:
        """Queue the report as the last line and wait until the writer has written it all."""
        with self._ready:
            if self.dropped:
                notice = Notice(
                    "ndjson",
                    f"{self.dropped} interval and resource events were left out: "
                    "the consumer did not keep up",
                    0.0,
                )
                self._queue.append(event_line(notice) or "")
            self._queue.append(report_line(report))
            self._closed = True
            self._ready.notify()
        self._thread.join()

    def _write(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                item = self._queue.popleft()
                if type(item) in LOSSY:
                    self._lossy -= 1
            line = item if isinstance(item, str) else event_line(item)
            if line and not self.broken:
                self._emit(line)

    def _emit(self, line: str) -> None:
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
