"""An embedded target that cannot start: exit 3 and one line naming it, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

COMMAND = (sys.executable, "-m", "protobench", "run", "mqtt-qos1", "--no-tui", "--quiet")
COMMAND += ("--warmup", "0s", "--duration", "1s")


def test_target_that_fails_to_start_exits_3_on_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [*COMMAND, "--serve-opt", "password_file=/nonexistent"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("protobench: error: embedded target 'mqtt' did not start")
    assert done.stderr.count("\n") <= 2, done.stderr
