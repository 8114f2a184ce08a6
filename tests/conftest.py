"""Fixtures of every test (the anyio backend, the CLI in the test's own directory), and the
time scale applied to every test's time limit and hypothesis's deadline per example
(see :mod:`tests.support.timing`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.cli import CliResult, run_cli
from tests.support.timing import SCALE, SCALE_VARIABLE

_deadline = settings().deadline  # None under hypothesis's own "ci" profile (CI set)
if _deadline is not None:
    settings.register_profile("timescale", deadline=_deadline * SCALE)
    settings.load_profile("timescale")


def pytest_report_header() -> str:
    given = os.environ.get(SCALE_VARIABLE)
    source = f"{SCALE_VARIABLE}={given}" if given is not None else "from the load average"
    return f"time scale: {SCALE:g} ({source})"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stretch each test's time limit (``--timeout`` or its ``timeout`` mark) by the time scale."""
    if SCALE == 1:
        return
    default = float(config.getoption("timeout", None) or 0)
    for item in items:
        marker = item.get_closest_marker("timeout")
        kwargs = dict(marker.kwargs) if marker else {}
        limit = float(marker.args[0] if marker and marker.args else kwargs.pop("timeout", default))
        if limit > 0:
            item.add_marker(pytest.mark.timeout(limit * SCALE, **kwargs), append=False)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., CliResult]:
    """Run the CLI with the test's own working directory (and so its own store)."""

    def invoke(*args: str, timeout: float = 120.0) -> CliResult:
        return run_cli(list(args), tmp_path, timeout=timeout)

    return invoke
