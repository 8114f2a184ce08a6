"""Runs on a 2-node Ray cluster simulated on this machine (``local:2``), all on loopback.

One cluster serves the whole module (starting it takes tens of seconds here);
the test that removes a node runs last. Skipped when the ``ray`` extra is absent.
"""

from __future__ import annotations

import gzip
import importlib.util
import ipaddress
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from protobench.engine.controller import Controller
from protobench.engine.distributed.cluster import RayBackend
from protobench.engine.distributed.pool import RayPoolFactory
from protobench.engine.events import Event, IntervalUpdate
from protobench.engine.plan import Overrides, RunPlan, resolve
from protobench.engine.report import exit_code_for
from protobench.engine.report_model import load_report, to_plain
from protobench.engine.sinks import Each
from protobench.profiles import loader
from protobench.snapshots.archive import stored_controller
from protobench.snapshots.store import SnapshotStore
from tests.cli.test_run_mqtt import _phases_sum
from tests.support.cli import run_cli
from tests.support.http_server import http_target
from tests.support.mqtt import FANOUT_QOS1

pytestmark = [
    pytest.mark.integration,
    pytest.mark.ray,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="the ray extra is not installed: pip install 'protobench[ray]'",
    ),
]


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayBackend]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as env, tempfile.TemporaryDirectory(prefix="pbr") as base:
        env.setenv("HOME", str(home))
        started = RayBackend("local:2", base=Path(base))
        try:
            yield started
        finally:
            started.close()


def _plan(url: str, **overrides: Any) -> RunPlan:
    values: dict[str, Any] = {"warmup": 1.0, "duration": 3.0, "connections": 8, "processes": 2}
    values.update(overrides)
    return resolve(loader.load("http-get"), Overrides(target=url, **values))


def _run(controller: Controller) -> dict[str, Any]:
    """The report of the run, as its JSON has it."""
    report = anyio.run(controller.run, backend="asyncio", backend_options={"use_uvloop": True})
    plain: dict[str, Any] = to_plain(report)
    return plain


def _all_ok(report: dict[str, Any]) -> int:
    return sum(phase["total"]["ok"] for phase in report["phases"].values())


def _cluster_pids() -> set[int]:
    me = psutil.Process()
    return {me.pid} | {p.pid for p in me.children(recursive=True)}


def _off_loopback(pids: set[int]) -> list[str]:
    outside = []
    for conn in psutil.net_connections(kind="inet"):
        if conn.pid not in pids:
            continue
        for address in (conn.laddr, conn.raddr):
            if not address:
                continue
            ip = ipaddress.ip_address(address.ip)
            mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
            if not (ip.is_loopback or (mapped is not None and mapped.is_loopback)):
                outside.append(f"pid {conn.pid} {conn.status} {conn.laddr} -> {conn.raddr}")
    return outside


def test_cli_run_on_local_2_prints_clean_json(tmp_path: Path) -> None:
    """``--ray local:2`` end to end: its own throwaway cluster, nothing of Ray on stdout."""
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    with http_target() as target:
        args = ["run", "http-get", "--target", target.url, "-c", "4", "-p", "2"]
        args += ["--warmup", "0s", "--duration", "2s", "--json", "--quiet", "--ray", "local:2"]
        done = subprocess.run(
            [sys.executable, "-m", "protobench", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
            check=False,
        )
        served = target.served()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert _all_ok(report) == served
    assert [len(n["workers"]) for n in report["nodes"]] == [1, 1]


def test_http_run_served_count_equals_merged_ok(backend: RayBackend, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    with http_target() as target:
        controller = stored_controller(
            _plan(target.url), store, pool_factory=RayPoolFactory(backend)
        )
        report = _run(controller)
        served = target.served()
    assert report["stop_reason"] == "completed", report["notices"]
    assert report["phases"]["sustain"]["total"]["errors"] == 0
    assert report["phases"]["sustain"]["total"]["ok"] > 100
    assert _all_ok(report) == served
    nodes = report["nodes"]
    assert len(nodes) == 2
    assert sorted(w for n in nodes for w in n["workers"]) == [0, 1]
    for node in nodes:
        assert node["address"] == "127.0.0.1"
        assert node["python"]
        assert node["protobench"]
        assert node["ray"]
        assert abs(node["clock_offset"]) < 1.0
        assert node["resources"]["samples"] >= 2
    assert {w["node"] for w in report["workers"]} == {n["id"] for n in nodes}
    with gzip.open(report["snapshot"], "rt") as raw:
        assert json.loads(raw.read())["report"]["nodes"] == nodes


def test_diff_of_a_ray_run_against_a_local_run(backend: RayBackend, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    with http_target() as target:
        plan = _plan(target.url, warmup=0.0, duration=2.0, connections=4)
        local = _run(stored_controller(plan, store))
        distributed = _run(stored_controller(plan, store, pool_factory=RayPoolFactory(backend)))
    refs = [Path(r["snapshot"]).name.removesuffix(".json.gz") for r in (local, distributed)]
    done = run_cli(["diff", *refs, "--snapshots-dir", str(store.directory), "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    rows = done.json()["rows"]
    assert any(r["op"] == "get" and r["metric"] == "throughput" for r in rows)


def test_mqtt_fanout_across_nodes_counts_exactly(backend: RayBackend, tmp_path: Path) -> None:
    profile = tmp_path / "fan.toml"
    profile.write_text(FANOUT_QOS1)
    plan = resolve(loader.load(str(profile)), Overrides(warmup=1.0, duration=3.0, processes=2))
    report = _run(
        stored_controller(plan, SnapshotStore(tmp_path / "s"), pool_factory=RayPoolFactory(backend))
    )
    assert report["stop_reason"] == "completed", report["notices"]
    published = _phases_sum(report, "pub", "ok")
    assert published > 300
    received = _phases_sum(report, "sub", "received")
    # As on one machine: exact but for the last few messages acknowledged at the very end.
    assert published * 4 - 4 * 5 <= received <= published * 4
    for name in ("lost", "duplicated", "out_of_order", "foreign"):
        assert _phases_sum(report, "sub", name) == 0
    assert [len(n["workers"]) for n in report["nodes"]] == [1, 1]


def test_every_socket_of_the_cluster_stays_on_loopback(backend: RayBackend) -> None:
    pids = _cluster_pids()
    assert len(pids) > 5, "the simulated cluster's processes are children of this one"
    assert _off_loopback(pids) == []


def test_stop_reaches_the_workers_of_every_node(backend: RayBackend, tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    controllers: list[Controller] = []

    def stop_after_two_intervals(event: Event) -> None:
        if isinstance(event, IntervalUpdate) and event.index == 1:
            controllers[0].stop()

    with http_target() as target:
        plan = _plan(target.url, warmup=0.0, duration=60.0)
        controllers.append(
            stored_controller(
                plan,
                store,
                sinks=[Each("test", stop_after_two_intervals)],
                pool_factory=RayPoolFactory(backend),
            )
        )
        report = _run(controllers[0])
    assert report["stop_reason"] == "interrupted"
    assert [(w["completed"], w["error"]) for w in report["workers"]] == [(True, None)] * 2
    assert report["phases"]["sustain"]["total"]["ok"] > 0
    assert report["phases"]["sustain"]["duration_s"] < 60


def test_every_worker_is_sampled_by_the_agent_of_its_node(
    backend: RayBackend, tmp_path: Path
) -> None:
    """The controller's resource samples, which the generator-bound verdict reads, hold
    every worker of every node as its agent sampled it."""
    with http_target() as target:
        plan = _plan(target.url, warmup=0.0, duration=3.0)
        controller = stored_controller(
            plan, SnapshotStore(tmp_path / "s"), pool_factory=RayPoolFactory(backend)
        )
        report = _run(controller)
    assert report["stop_reason"] == "completed", report["notices"]
    workers = {(w["node"], w["pid"]) for w in report["workers"]}
    assert {node for node, _ in workers} == {n["id"] for n in report["nodes"]}
    sustain = [s for s in controller.resources.series if s["phase"] == "sustain"]
    assert len(sustain) >= 2
    for sample in sustain:
        assert {(w["node"], w["pid"]) for w in sample["workers"]} == workers
        assert not any(w.get("off_host") for w in sample["workers"])  # all on this machine
    figures = controller.resources.phase("sustain")
    assert figures.busy.total == len(sustain)
    assert report["resources"]["generator"]["worker_cpu_peak"] > 0


def test_pause_resume_and_rate_reach_the_workers_of_every_node(
    backend: RayBackend, tmp_path: Path
) -> None:
    """The controller's commands over Ray: nothing done while paused, then a fifth of the rate."""
    ok: list[int] = []
    controllers: list[Controller] = []

    def drive(event: Event) -> None:
        if not isinstance(event, IntervalUpdate):
            return
        ok.append(event.total.ok)
        commands = {2: controllers[0].pause, 5: controllers[0].resume}
        commands[7] = lambda: controllers[0].set_rate_factor(0.2)
        if len(ok) in commands:
            commands[len(ok)]()

    with http_target() as target:
        plan = _plan(target.url, warmup=0.0, duration=11.0, rate=100.0)
        controllers.append(
            stored_controller(
                plan,
                SnapshotStore(tmp_path / "s"),
                sinks=[Each("test", drive)],
                pool_factory=RayPoolFactory(backend),
            )
        )
        report = _run(controllers[0])
    assert report["stop_reason"] == "completed", report["notices"]
    assert [n["kind"] for n in report["notices"]] == ["pause", "resume", "rate"]
    assert len(ok) >= 10, ok
    # Paused after interval 1's report, resumed after interval 4's: a whole interval is empty.
    assert min(ok[2:5]) == 0, ok
    assert ok[5] + ok[6] > 0, ok
    before, after = sum(ok[:2]) / 2, sum(ok[8:]) / len(ok[8:])
    assert 0 < after < before / 2, ok


def test_a_killed_worker_is_gone_and_the_other_node_goes_on(
    backend: RayBackend, tmp_path: Path
) -> None:
    controllers: list[Controller] = []
    killed: list[int] = []
    after: list[int] = []

    def kill_one(event: Event) -> None:
        if not isinstance(event, IntervalUpdate):
            return
        if killed:
            after.append(event.total.ok)
        elif event.index >= 1:
            pool = controllers[0].pool
            assert pool is not None
            pid = pool.handles[0].pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    with http_target() as target:
        plan = _plan(target.url, warmup=0.0, duration=5.0)
        controllers.append(
            stored_controller(
                plan,
                SnapshotStore(tmp_path / "s"),
                sinks=[Each("test", kill_one)],
                pool_factory=RayPoolFactory(backend),
            )
        )
        report = _run(controllers[0])
    assert report["stop_reason"] == "worker-failed"
    first, second = report["workers"]
    assert (first["pid"], first["exit_code"], first["completed"]) == (killed[0], -9, False)
    assert first["error"] == "exited with code -9"
    assert (second["completed"], second["error"]) == (True, None)
    assert not any(n["lost"] for n in report["nodes"])
    assert [n["worker"] for n in report["notices"] if n["kind"] == "worker"] == [0]
    assert sum(after[1:]) > 0, after  # the other node's worker went on
    assert exit_code_for(load_report(report)) == 3


def test_abort_has_every_agent_kill_its_workers_at_once(
    backend: RayBackend, tmp_path: Path
) -> None:
    """A worker stopped with SIGSTOP cannot take its STOP: the second Ctrl-C's abort has its
    agent kill it (and the other node's) at once, and says so."""
    controllers: list[Controller] = []

    def stop_one_then_abort(event: Event) -> None:
        if isinstance(event, IntervalUpdate) and event.index == 1:
            pool = controllers[0].pool
            assert pool is not None
            assert pool.handles[0].pid is not None
            os.kill(pool.handles[0].pid, signal.SIGSTOP)
            controllers[0].abort()

    with http_target() as target:
        plan = _plan(target.url, warmup=0.0, duration=60.0)
        controllers.append(
            stored_controller(
                plan,
                SnapshotStore(tmp_path / "s"),
                sinks=[Each("test", stop_one_then_abort)],
                pool_factory=RayPoolFactory(backend),
            )
        )
        report = _run(controllers[0])
    assert report["stop_reason"] == "interrupted"
    stopped = report["workers"][0]
    assert (stopped["exit_code"], stopped["completed"]) == (-9, False)
    assert stopped["error"] == "killed: the run was stopped at once"
    assert report["phases"]["sustain"]["total"]["ok"] > 0


def test_a_removed_node_makes_the_run_partial(backend: RayBackend, tmp_path: Path) -> None:
    assert backend.local is not None
    store = SnapshotStore(tmp_path / "snapshots")
    with http_target() as target:
        intervals: list[IntervalUpdate] = []
        running = threading.Event()

        def count(event: Event) -> None:
            if isinstance(event, IntervalUpdate):
                intervals.append(event)
                if len(intervals) >= 2:
                    running.set()

        plan = _plan(target.url, duration=8.0, warmup=0.0)
        controller = stored_controller(
            plan, store, sinks=[Each("test", count)], pool_factory=RayPoolFactory(backend)
        )

        def remove_when_running() -> None:
            running.wait(timeout=120)
            assert backend.local is not None
            backend.local.remove(0)

        killer = threading.Thread(target=remove_when_running)
        killer.start()
        report = _run(controller)
        killer.join()
    assert report["stop_reason"] == "worker-failed"
    lost = [n for n in report["nodes"] if n["lost"]]
    assert len(lost) == 1
    gone = [w for w in report["workers"] if w["error"]]
    assert [w["worker"] for w in gone] == lost[0]["workers"]
    assert any(n["kind"] == "node" for n in report["notices"])
    assert any(n["kind"] == "worker" for n in report["notices"])
    assert exit_code_for(load_report(report)) == 3
    assert Path(report["snapshot"]).exists()
    assert report["phases"]["sustain"]["total"]["ok"] > 0
