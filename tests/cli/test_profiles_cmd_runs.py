"""A profile made by ``profiles new`` runs: the copy of a built-in is a working profile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def protobench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "protobench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("builtin", ["http-get", "ws-echo"])
def test_new_profile_runs(tmp_path: Path, builtin: str) -> None:
    made = protobench(tmp_path, "profiles", "new", "mine", "--from", builtin)
    assert made.returncode == 0, made.stderr
    done = protobench(
        tmp_path, "run", "mine.toml", "--warmup", "0s", "--duration", "1s", "-c", "2", "-p", "1",
        "--json", "--quiet",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["profile"] == "mine"
    assert report["phases"]["sustain"]["total"]["ok"] > 0
