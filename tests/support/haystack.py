"""Helpers of the Haystack (and Beckn) tests: the embedded server in this loop, a driver, runs."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from protobench.protocols.base import (
    AsyncSession,
    CallbackSession,
    NoParams,
    Session,
    SessionContext,
    StrictModel,
)
from protobench.protocols.haystack.credentials import DEV_PASSWORD
from protobench.protocols.haystack.options import OPERATIONS, HaystackOptions
from protobench.protocols.haystack.plugin import HaystackProtocol
from protobench.targets.haystack import HaystackServeOptions, HaystackTarget
from protobench.vocab.errors import ErrorClass, OpError
from tests.support.cli import CliResult
from tests.support.targets import running
from tests.support.timing import S

UVLOOP_BACKEND = ("asyncio", {"use_uvloop": True})
SMALL: dict[str, Any] = {
    "sites": 1,
    "ahus_per_site": 2,
    "vavs_per_site": 10,
    "meters_per_site": 2,
    "his_samples": 6,
}
"""A small portfolio (1 site, 14 equips, 126 points): fast to build, same shape."""


def haystack_server(**options: Any) -> contextlib.AbstractAsyncContextManager[str]:
    """The embedded Haystack server (a small portfolio) in this loop; yields its URL."""
    return running(HaystackTarget(), HaystackServeOptions(**{**SMALL, **options}))


def context(
    url: str,
    op: str,
    params: StrictModel | None = None,
    index: int = 0,
    counters: Counter[str] | None = None,
    **options: Any,
) -> SessionContext:
    """A session context for ``op`` with the dev password unless ``options`` say otherwise.

    ``counters`` receives what the session counts (``connects``...).
    """
    options.setdefault("password", DEV_PASSWORD)
    model = OPERATIONS[op]
    sink = counters if counters is not None else Counter[str]()
    return SessionContext(
        target=url,
        group=op,
        op=op,
        index=index,
        worker=0,
        params=params if params is not None else (model() if model is not NoParams else NoParams()),
        options=HaystackOptions(**options),
        timeout=10.0,
        count=lambda name, n: sink.update({name: n}),
    )


async def exchange(session: Session, n: int = 1) -> list[tuple[OpError | None, int]]:
    """``n`` exchanges back-to-back, as the engine runs them: ``(error or None, bytes)``."""
    results: list[tuple[OpError | None, int]] = []
    for _ in range(n):
        if isinstance(session, CallbackSession):
            future: asyncio.Future[tuple[OpError | None, int]] = (
                asyncio.get_running_loop().create_future()
            )

            def done(
                error: OpError | None,
                nbytes: int,
                future: asyncio.Future[tuple[OpError | None, int]] = future,
            ) -> None:
                future.set_result((error, nbytes))

            session.submit(done)
            results.append(await asyncio.wait_for(future, 15 * S))
        else:
            assert isinstance(session, AsyncSession)
            try:
                results.append((None, await session.call()))
            except OpError as exc:
                results.append((exc, 0))
    return results


async def open_and_run(ctx: SessionContext, n: int = 3) -> list[tuple[OpError | None, int]]:
    """Open a session of ``ctx``, run ``n`` exchanges, close it."""
    session = await HaystackProtocol().open_session(ctx)
    try:
        return await exchange(session, n)
    finally:
        await session.close()


def error_of(result: tuple[OpError | None, int], error_class: ErrorClass) -> OpError:
    """The error of an exchange result, checked to be of ``error_class``."""
    error = result[0]
    assert error is not None, "expected an error, got a success"
    assert error.error_class is error_class, error
    return error


SHORT = ("--warmup", "1s", "--duration", "3s", "--json", "--quiet", "--processes", "2")


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    """``python -m protobench run ARGS`` in ``tmp_path`` (its own snapshot store)."""
    done = subprocess.run(
        [sys.executable, "-m", "protobench", "run", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180 * S,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def stored_text(tmp_path: Path) -> str:
    """Everything the run left on disk (snapshots unzipped, logs), as text."""
    parts = []
    for path in (tmp_path / ".protobench").rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            parts.append((gzip.decompress(raw) if path.suffix == ".gz" else raw).decode())
    return "\n".join(parts)


def assert_all_groups_clean(report: dict[str, Any], groups: list[str]) -> None:
    """Every group succeeded in the sustain phase and nothing failed."""
    sustain = report["phases"]["sustain"]
    assert sustain["total"]["errors"] == 0, sustain["total"]["last_errors"]
    for group in groups:
        assert sustain["ops"][group]["ok"] > 0, group
        assert sustain["ops"][group]["errors"] == 0, group
