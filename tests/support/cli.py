"""Shared fixtures: running the CLI in a subprocess, a private snapshot store, free ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(args: list[str], cwd: Path, timeout: float = 120.0, **kwargs: Any) -> CliResult:
    """Run ``python -m protobench ARGS`` in ``cwd`` and capture its output."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "protobench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
        **kwargs,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Run the CLI with the test's own working directory (and so its own store)."""

    def invoke(*args: str, timeout: float = 120.0) -> CliResult:
        return run_cli(list(args), tmp_path, timeout=timeout)

    return invoke
