"""The live source runs the real engine in its own thread; events cross to the UI's loop,
commands to the engine's."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from protobench.engine.events import Event, IntervalUpdate, Notice, RunFinished, RunStarted
from protobench.engine.plan import Overrides, WorkerSlice, resolve
from protobench.engine.pool import WorkerPool
from protobench.profiles import loader
from protobench.snapshots.store import SnapshotStore
from protobench.tui.live_source import LiveSource

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("protobench.protocols.http.plugin") is None,
        reason="the http plugin (protobench.protocols.http.plugin) is not in the tree yet",
    ),
]


def test_commands_from_another_thread_reach_the_engine(tmp_path: Path) -> None:
    overrides = Overrides(duration=6.0, warmup=0.0, processes=1, connections=4, rate=200.0)
    plan = resolve(loader.load("http-get"), overrides)
    store = SnapshotStore(tmp_path / "snapshots")
    source = LiveSource(plan, store)
    events: list[Event] = []
    threads: set[str] = set()

    def ui(*commands: Callable[[], None]) -> None:
        """Send commands the way the UI does: from a thread other than the engine's."""
        thread = threading.Thread(target=lambda: [command() for command in commands])
        thread.start()

    def emit(event: Event) -> None:
        events.append(event)
        threads.add(threading.current_thread().name)
        if isinstance(event, RunStarted):
            ui(source.pause, lambda: source.set_rate_factor(1.5), source.resume)
        if isinstance(event, IntervalUpdate) and event.elapsed >= 1.0:
            ui(lambda: source.stop("stopped"))

    asyncio.run(source.run(emit))
    assert threads == {threading.main_thread().name}  # the loop that awaited run()
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunFinished)
    notices = [(e.kind, e.details.get("factor")) for e in events if isinstance(e, Notice)]
    assert notices == [("pause", None), ("rate", 1.5), ("resume", None)]
    report = source.report
    assert report is not None
    assert report.stop_reason == "stopped"
    assert report.phases["sustain"].duration_s < 5.0  # the workers did stop early
    assert [n.kind for n in report.notices] == ["pause", "rate", "resume"]
    assert report.snapshot is not None
    assert Path(report.snapshot).is_file()
    assert source.log_dir is not None
    assert (source.log_dir / "worker-0.log").is_file()
    assert not source.running
    assert source.join(0)


def test_the_pool_comes_from_the_given_factory(tmp_path: Path) -> None:
    """As ``--ray`` does: the live source hands its pool factory to the controller."""
    plan = resolve(loader.load("http-get"), Overrides(duration=1.0, warmup=0.0, processes=1))
    made: list[tuple[int, Path]] = []

    def factory(slices: list[WorkerSlice], log_dir: Path) -> WorkerPool:
        made.append((len(slices), log_dir))
        return WorkerPool(slices, log_dir)

    source = LiveSource(plan, SnapshotStore(tmp_path / "snapshots"), pool_factory=factory)
    events: list[Event] = []
    asyncio.run(source.run(events.append))
    assert made == [(1, source.log_dir)]
    assert isinstance(events[-1], RunFinished)
    assert source.report is not None
    assert source.report.stop_reason == "completed"
