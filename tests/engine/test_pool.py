"""The worker pool with real worker processes against the embedded HTTP target.

Controls that come early are delivered in order; a stopped worker (SIGSTOP),
even before its first frame, is killed as stopped, and one whose plugin
blocks its event loop as blocked, while the others go on; shutdown and abort
end stopped workers, and a spawn that fails part-way leaves no worker behind.
Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from protobench.engine import pool as pool_module
from protobench.engine.frames import FrameKind
from protobench.engine.plan import GroupPlan, RunPlan, worker_slices
from protobench.engine.pool import WorkerPool
from protobench.engine.pool_contract import Frame
from tests.support import blocking_plugin
from tests.support.http_server import http_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _plan(url: str, processes: int, duration: float, protocol: str = "http") -> RunPlan:
    return RunPlan(
        profile="pool", source="pool.toml", profile_sha256="0", protocol=protocol, description="",
        target=url, embedded=None, warmup=0.0, duration=duration, interval=0.5,
        processes=processes, model="closed", rate=None, ramp_to=None, timeout=2.0, drain=0.5,
        thresholds=(), options={}, serve={},
        groups=(GroupPlan("get", "request", 2 * processes, None, 1.0, {}),), overrides={},
    )  # fmt: skip


async def _go(pool: WorkerPool, url: str) -> None:
    await pool.start(url)
    hellos = await pool.wait_hello(anyio.Event(), 30)
    assert len(hellos) == len(pool.handles), [h.error for h in pool.handles]
    pool.broadcast(FrameKind.GO, {"start_at": time.monotonic() + 0.1})


async def _frames(pool: WorkerPool) -> AsyncIterator[Frame]:
    async for frame in pool.frames():
        yield frame


async def test_a_pause_before_the_plan_is_held_and_delivered_after_go(tmp_path: Path) -> None:
    with http_target() as target:
        async with WorkerPool(worker_slices(_plan(target.url, 1, 60.0)), tmp_path) as pool:
            pool.broadcast(FrameKind.PAUSE, {})  # the embedded target is still starting
            with anyio.fail_after(60):
                await _go(pool, target.url)
                ok: list[int] = []
                kinds: list[str] = []
                async for _handle, kind, payload in _frames(pool):
                    kinds.append(kind)
                    if kind is not FrameKind.STATS:
                        continue
                    ok.append(payload["ops"]["get"].get("ok", 0))
                    if len(ok) == 2:
                        pool.broadcast(FrameKind.RESUME, {})
                    if len(ok) == 4:
                        pool.broadcast(FrameKind.STOP, {})
            assert ok[:2] == [0, 0]  # paused from the start
            assert sum(ok[2:]) > 0  # and resumed
            assert kinds[-2:] == [FrameKind.BYE, FrameKind.GONE]
            assert all(h.error is None for h in pool.handles)


async def test_a_stopped_worker_is_killed_as_stopped_and_the_others_go_on(tmp_path: Path) -> None:
    with http_target() as target:
        async with WorkerPool(worker_slices(_plan(target.url, 2, 30.0)), tmp_path) as pool:
            with anyio.fail_after(60):
                await _go(pool, target.url)
                stopped = pool.handles[0]
                after: list[dict[str, Any]] = []
                gone: dict[int, str | None] = {}
                async for handle, kind, payload in _frames(pool):
                    if kind is FrameKind.STATS and handle is pool.handles[1]:
                        if stopped.pid is not None and not gone and not after:
                            os.kill(stopped.pid, signal.SIGSTOP)
                        if 0 in gone:
                            after.append(payload)
                            if len(after) == 2:
                                pool.broadcast(FrameKind.STOP, {})
                    if kind is FrameKind.GONE and handle is not None:
                        gone[handle.index] = handle.error
            assert "stopped (SIGSTOP or a debugger); killed" in str(gone[0]), gone
            assert gone[1] is None
            assert sum(p["ops"]["get"].get("ok", 0) for p in after) > 0
            assert stopped.process.returncode == -signal.SIGKILL


async def test_a_worker_stopped_before_its_first_frame_is_killed_and_the_others_start(
    tmp_path: Path,
) -> None:
    with http_target() as target:
        async with WorkerPool(worker_slices(_plan(target.url, 2, 30.0)), tmp_path) as pool:
            stopped = pool.handles[0]
            with anyio.fail_after(60):
                while stopped.pid is None:  # noqa: ASYNC110 - forked, waiting for its plan
                    await anyio.sleep(0.01)
                os.kill(stopped.pid, signal.SIGSTOP)
                await pool.start(target.url)
                hellos = await pool.wait_hello(anyio.Event(), 50)
            assert [h["pid"] for h in hellos] == [pool.handles[1].pid]
            assert pool.live == {1}
            assert "stopped (SIGSTOP or a debugger); killed" in str(stopped.error)
            assert stopped.process.returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    ("how", "diagnosis"),
    [
        ("sleep", "its event loop is blocked (waiting in a blocking call); killed"),
        ("spin", "its event loop is blocked (busy: a plugin or decoder that does not yield)"),
    ],
)
async def test_a_worker_whose_plugin_blocks_its_loop_is_killed_as_blocked_not_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, diagnosis: str
) -> None:
    for key, value in blocking_plugin.installed(tmp_path / "plugin", 1.0, how).items():
        monkeypatch.setenv(key, value)
    plan = _plan("", 2, 30.0, protocol=blocking_plugin.NAME)
    with http_target() as target:
        async with WorkerPool(worker_slices(replace(plan, target=target.url)), tmp_path) as pool:
            with anyio.fail_after(60):
                await _go(pool, target.url)
                gone: dict[int, str | None] = {}
                stats = dict.fromkeys(range(2), 0)
                async for handle, kind, _ in _frames(pool):
                    if kind is FrameKind.STATS and handle is not None:
                        stats[handle.index] += 1
                        if 0 in gone and stats[1] >= stats[0] + 2:
                            pool.broadcast(FrameKind.STOP, {})
                    if kind is FrameKind.GONE and handle is not None:
                        gone[handle.index] = handle.error
            assert diagnosis in str(gone[0]), gone
            assert "stopped" not in str(gone[0])
            assert gone[1] is None
            assert stats[0] >= 1  # it reported before it blocked


async def test_shutdown_kills_a_stopped_worker(tmp_path: Path) -> None:
    with http_target() as target:
        async with WorkerPool(worker_slices(_plan(target.url, 1, 30.0)), tmp_path) as pool:
            with anyio.fail_after(60):
                await _go(pool, target.url)
                handle = pool.handles[0]
                os.kill(handle.pid, signal.SIGSTOP)
                await pool.shutdown()
            assert handle.process.returncode == -signal.SIGKILL
            assert "did not stop" in str(handle.error)


async def test_abort_kills_every_worker_at_once(tmp_path: Path) -> None:
    with http_target() as target:
        async with WorkerPool(worker_slices(_plan(target.url, 2, 30.0)), tmp_path) as pool:
            with anyio.fail_after(60):
                await _go(pool, target.url)
                pool.abort()
                errors = [
                    h.error async for h, kind, _ in _frames(pool) if kind is FrameKind.GONE and h
                ]
            assert len(errors) == 2
            assert all("killed" in str(e) for e in errors)


@pytest.mark.parametrize("failing", ["pipe", "spawn"])
async def test_a_failed_start_leaves_no_pipe_open_and_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    real_pipe, real_spawn = os.pipe, anyio.open_process
    pipes: list[tuple[int, int]] = []

    def pipe() -> tuple[int, int]:
        if failing == "pipe" and len(pipes) == 3:  # the second worker's stdout
            raise OSError(24, "Too many open files")
        pipes.append(real_pipe())
        return pipes[-1]

    async def open_process(*args: Any, **kwargs: Any) -> Any:
        if failing == "spawn":
            raise OSError(24, "Too many open files")
        return await real_spawn(*args, **kwargs)

    monkeypatch.setattr(pool_module.os, "pipe", pipe)
    monkeypatch.setattr(anyio, "open_process", open_process)
    before = set(os.listdir("/proc/self/fd"))
    slices = worker_slices(_plan("http://127.0.0.1:1/", 3, 30.0))
    with anyio.fail_after(30), pytest.raises(OSError, match="Too many open files"):
        async with WorkerPool(slices, tmp_path) as pool:
            del pool
    assert pipes
    assert set(os.listdir("/proc/self/fd")) <= before
