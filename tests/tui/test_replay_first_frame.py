"""What a replay loads before its first frame (issue 30: ``replay`` took as long as ``run``).

The monitor's modules import neither the engine's controller (the whole engine: pools,
targets, protocols) nor numpy or pydantic; a replay computes its timeline after the start
is on screen. Checked in a fresh interpreter, as a user's command starts.
"""

from __future__ import annotations

import json
import subprocess
import sys

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
