"""The replay's entry point for the CLI: a snapshot played through the monitor's screens.

Only what the first frame needs is loaded before it: Textual, the screens and
the typed snapshot. The replay's timeline (the engine's aggregation and judge)
is computed by :class:`~protobench.tui.source.ReplaySource` once the monitor
is up. SIGINT and SIGTERM close the replay as ``q`` does (exit code 0).
"""

from __future__ import annotations

import importlib.util

from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotStore
from protobench.tui.baseline import Baseline
from protobench.tui.signals import STOP_SIGNALS, Ending, handled
from protobench.tui.source import ReplaySource

if importlib.util.find_spec("textual") is None:  # the CLI prints the summary instead
    raise ImportError("the monitor needs textual (Textual is imported only when it opens)")


def run_replay(
    snapshot: Snapshot,
    store: SnapshotStore,
    speed: float = 1.0,
    baseline: Baseline | None = None,
) -> int:
    """Play a snapshot in the monitor (compared with ``baseline``) until the user quits."""
    from protobench.tui.app import MonitorApp  # noqa: PLC0415 - Textual loads only here

    source = ReplaySource(snapshot, speed, store.logs_of(snapshot.id))
    app = MonitorApp(source, store, speed=speed, baseline=baseline)
    ending = Ending(None)
    ending.attach(app)
    with handled(dict.fromkeys(STOP_SIGNALS, ending)):
        app.run()
    return 0
