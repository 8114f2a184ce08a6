"""A stop asks the workers to stop (once, however often it is asked); abort kills them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protobench.engine.controller import Controller
from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader


class FakePool:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.aborted = 0

    def broadcast(self, kind: str, payload: dict[str, Any]) -> None:
        del payload
        self.sent.append(kind)

    def abort(self) -> None:
        self.aborted += 1


def test_stop_is_asked_once_and_abort_kills_the_workers(tmp_path: Path) -> None:
    plan = resolve(loader.load("http-get"), Overrides(duration=1.0))
    controller = Controller(plan, tmp_path)
    pool = FakePool()
    controller.pool = pool  # type: ignore[assignment]
    controller.stop()
    assert (pool.sent, pool.aborted, controller.stop_reason) == (["STOP"], 0, "interrupted")
    controller.stop("error")
    assert (pool.sent, pool.aborted, controller.stop_reason) == (["STOP"], 0, "interrupted")
    controller.abort()
    assert (pool.sent, pool.aborted, controller.stop_reason) == (["STOP"], 1, "interrupted")
