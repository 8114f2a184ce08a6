"""Running ``python -m protobench`` in a subprocess, and the repository's root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.timing import SCALE

REPO = Path(__file__).resolve().parents[2]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(
    args: list[str],
    cwd: Path,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> CliResult:
    """Run ``python -m protobench ARGS`` in ``cwd`` and capture its output.

    ``timeout`` (seconds on a quiet machine) is stretched by the tests' time scale;
    ``env`` adds to (or replaces) the environment's variables.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "protobench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout * SCALE,
        env=env,
        check=False,
        **kwargs,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)
