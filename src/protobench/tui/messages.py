"""Every message of the monitor, as dataclasses.

Run data reaches the widgets by one path: the :class:`~protobench.tui.feed.Feed`
posts :class:`ViewUpdated` (only the newest is handled: ``can_replace``), the
app renders it inside ``batch_update``. Commands the user gives are posted as
:class:`CommandSent` so that tests (and anything else listening) see them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from protobench.engine.events import Notice
from protobench.engine.report_model import Report
from protobench.tui.baseline import Baseline
from protobench.tui.view import RunView


@dataclass
class ViewUpdated(Message):
    """A new picture of the run; a newer one replaces it in the queue."""

    view: RunView

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ViewUpdated)


@dataclass
class NoticeShown(Message):
    """Something happened that the user should see at once (a worker died...)."""

    notice: Notice


@dataclass
class RunEnded(Message):
    """The run is over: the final report (``None`` when the engine failed)."""

    report: Report | None
    exit_code: int | None


@dataclass
class CommandSent(Message):
    """The user sent a command to the source (``pause``, ``rate``, ``stop``...)."""

    command: str
    value: Any = None


@dataclass
class BaselineChosen(Message):
    """A baseline snapshot to overlay was loaded (``None``: the overlay is removed)."""

    baseline: Baseline | None
