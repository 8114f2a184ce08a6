"""Fixtures of every test: the anyio backend, and the CLI run in the test's own directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Run the CLI with the test's own working directory (and so its own store)."""

    def invoke(*args: str, timeout: float = 120.0) -> CliResult:
        return run_cli(list(args), tmp_path, timeout=timeout)

    return invoke
