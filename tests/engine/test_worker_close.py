"""A session whose ``close`` never returns cannot keep a worker from saying BYE."""

from __future__ import annotations

import asyncio
import os
from typing import Any, cast

import pytest
import uvloop

from protobench.engine import worker as worker_module
from protobench.engine.metrics import OpRecorder
from protobench.engine.plan import GroupPlan, RunPlan, worker_slices
from protobench.engine.schedule import Slot
from protobench.engine.worker import FrameWriter, Worker
from protobench.protocols.base import AsyncSession


class _Stuck(AsyncSession):
    async def call(self) -> int:
        return 0

    async def close(self) -> None:
        await asyncio.Event().wait()


def test_closing_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "CLOSE_TIMEOUT", 0.05)
    plan = RunPlan(
        profile="t", source="t.toml", profile_sha256="0", protocol="http", description="",
        target="http://127.0.0.1:1/", embedded=None, warmup=0.0, duration=1.0, interval=1.0,
        processes=1, model="closed", rate=None, ramp_to=None, timeout=0.05, drain=1.0,
        thresholds=(), options={}, serve={},
        groups=(GroupPlan("get", "request", 2, None, 1.0, {}),), overrides={},
    )  # fmt: skip
    with open(os.devnull, "wb") as devnull:
        worker = Worker(worker_slices(plan)[0], plan.target or "", FrameWriter(devnull.fileno()))
        recorder = OpRecorder("get")
        slots = [Slot(worker.plugin, cast(Any, None), recorder) for _ in range(2)]
        for slot in slots:
            slot.session = _Stuck()
        worker.slots["get"] = slots
        uvloop.run(asyncio.wait_for(worker.close(), 10.0))
    assert all(slot.session is None for slot in slots)
