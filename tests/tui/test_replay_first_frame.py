"""What a replay loads before its first frame (issue 30: ``replay`` took as long as ``run``).

The monitor's modules import neither the engine's controller (the whole engine: pools,
targets, protocols) nor numpy or pydantic; a replay computes its timeline after the start
is on screen. Checked in a fresh interpreter, as a user's command starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from protobench.engine.report_model import to_plain
from protobench.snapshots.store import SnapshotStore
from tests.support.scripted_run import Script, scripted_snapshot

HEAVY = (
    "protobench.engine.controller",
    "protobench.engine.aggregate",
    "protobench.snapshots.diff",
    "protobench.tui.timeline",
    "numpy",
    "pydantic",
    "psutil",
)


def test_the_monitor_and_the_replay_load_no_engine_numpy_or_pydantic() -> None:
    code = (
        "import json, sys\n"
        "import protobench.tui.app, protobench.tui.replay\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_replays_first_read_of_a_snapshot_loads_none_of_them(tmp_path: Path) -> None:
    """``replay`` reads the snapshot's JSON (with the loader's bounds) before its first frame:
    that read loads nothing heavy either (the bounds once imported the aggregator)."""
    snapshot = scripted_snapshot(Script())
    path = SnapshotStore(tmp_path).write(snapshot.id, to_plain(snapshot))
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from protobench.snapshots.store import read_json\n"
        f"assert read_json(Path({str(path)!r}))['id']\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
