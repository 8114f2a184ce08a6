"""The replay's entry point for the CLI: a snapshot played through the monitor's screens.

Only what the first frame needs is loaded before it: Textual, the screens and
the snapshot's JSON, whose start the header shows. The snapshot's check
(pydantic) and the replay's timeline (the engine's aggregation and judge) are
computed by :class:`~protobench.tui.source.ReplaySource` once the monitor is
up; a snapshot that fails the check closes the monitor and its error is
raised here. SIGINT and SIGTERM close the replay as ``q`` does (exit code 0).
"""

from __future__ import annotations

import importlib.util
from functools import partial
from pathlib import Path
from typing import Any

from protobench.engine.report_model import Report
from protobench.snapshots.store import SnapshotStore, read
from protobench.tui.baseline import Baseline
from protobench.tui.signals import STOP_SIGNALS, Ending, handled
from protobench.tui.source import ReplaySource

if importlib.util.find_spec("textual") is None:  # the CLI prints the summary instead
    raise ImportError("the monitor needs textual (Textual is imported only when it opens)")


def run_replay(
    path: Path,
    head: dict[str, Any],
    store: SnapshotStore,
    speed: float = 1.0,
    baseline: Baseline | None = None,
) -> Report | None:
    """Play the snapshot in ``path`` (its JSON: ``head``) in the monitor, compared with
    ``baseline``, until the user quits; its report (None: quit before it was checked).

    A snapshot that does not pass the check raises its
    :class:`~protobench.snapshots.store.SnapshotError` once the monitor has closed.
    """
    from protobench.tui.app import MonitorApp  # noqa: PLC0415 - Textual loads only here

    identity = head.get("id")
    logs = store.logs_of(identity) if isinstance(identity, str) and identity else None
    source = ReplaySource.reading(partial(read, path, head), head, speed, logs)
    app = MonitorApp(source, store, speed=speed, baseline=baseline)
    ending = Ending(None)
    ending.attach(app)
    with handled(dict.fromkeys(STOP_SIGNALS, ending)):
        app.run()
    if app.failure is not None:
        raise app.failure
    return source.report
