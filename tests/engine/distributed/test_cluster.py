"""The Ray backend without a cluster: spec parsing, slices per node, refusals, a missing extra,
the agents' resource frames feeding the controller's resource log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import psutil
import pytest

from protobench.engine.bounds import Tally
from protobench.engine.distributed.cluster import (
    MISSING,
    Node,
    RayBackend,
    RayBackendError,
    check_reachable,
    check_versions,
    clock_warnings,
    parse_spec,
)
from protobench.engine.distributed.pool import STALE_INTERVALS, RayPool, assign
from protobench.engine.frames import encode_frame
from protobench.engine.plan import Overrides, resolve, worker_slices
from protobench.engine.report_model import HostResources, NodeResourceSummary
from protobench.engine.resource_log import ResourceLog, merge_samples
from protobench.engine.resources import Sampler
from protobench.engine.summaries import EMPTY_OP, PhaseSummary
from protobench.engine.verdicts import cpu_verdicts
from protobench.profiles import loader


def _node(name: str, cpus: int = 1, address: str = "127.0.0.1", **info: Any) -> Node:
    values = {"python": "3.13.0", "protobench": "0.1.0", "cpus": cpus, **info}
    return Node(name, address, agent=None, info=values)


def test_parse_spec() -> None:
    assert parse_spec("auto") == (None, 0)
    assert parse_spec("local:2") == (None, 2)
    assert parse_spec("10.0.0.1:6379") == ("10.0.0.1:6379", 0)
    for bad in ("local:0", "local:x", "nowhere"):
        with pytest.raises(RayBackendError, match=f"--ray {bad}"):
            parse_spec(bad)


def test_slices_go_to_nodes_in_proportion_to_cpus_with_global_indices() -> None:
    plan = resolve(loader.load("http-get"), Overrides(target="http://127.0.0.1:1/", processes=8))
    slices = worker_slices(plan)
    nodes = [_node("a", cpus=2), _node("b", cpus=6)]
    assigned = assign(slices, nodes)
    assert [s.worker for s in assigned["a"]] == [0, 1]
    assert [s.worker for s in assigned["b"]] == [2, 3, 4, 5, 6, 7]
    odd = assign(slices[:3], [_node("a"), _node("b")])
    assert sorted(len(v) for v in odd.values()) == [1, 2]


def test_mismatched_versions_are_refused_and_listed() -> None:
    check_versions([_node("a"), _node("b")])
    nodes = [_node("a", address="10.0.0.1"), _node("b", address="10.0.0.2", python="3.13.1")]
    with pytest.raises(RayBackendError) as caught:
        check_versions(nodes)
    assert str(caught.value) == (
        "--ray: the nodes run different python versions: 10.0.0.1 3.13.0, 10.0.0.2 3.13.1"
    )


def test_clock_offsets_above_5_percent_of_the_interval_are_reported() -> None:
    near, far = _node("aaaaaaaa-near"), _node("bbbbbbbb-far")
    near.clock_offset, far.clock_offset = 0.04, -0.06
    assert clock_warnings([near, far], 1.0) == [
        "node bbbbbbbb (127.0.0.1): clock off by -60.0 ms, more than 5% of the 1 s interval"
    ]


def test_an_embedded_target_is_refused_with_remote_nodes() -> None:
    backend = RayBackend.__new__(RayBackend)
    backend.ray = SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: "10.0.0.1"))
    backend.nodes = [_node("a", address="10.0.0.1")]
    backend.check_plan(embedded=True)
    backend.nodes.append(_node("b", address="10.0.0.2"))
    backend.check_plan(embedded=False)
    with pytest.raises(RayBackendError, match=r"nodes 10\.0\.0\.2 are remote"):
        backend.check_plan(embedded=True)


def test_an_address_where_nothing_listens_fails_at_once() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(RayBackendError, match=rf"--ray 127\.0\.0\.1:{port}: no Ray head answers"):
        check_reachable(f"127.0.0.1:{port}")


def test_a_missing_extra_is_one_line_and_exit_2(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ray here')\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "protobench", "run", "http-get", "--ray", "auto", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"protobench: error: {MISSING}\n"


def _pool(here: str, *nodes: Node) -> RayPool:
    plan = resolve(
        loader.load("http-get"), Overrides(target="http://127.0.0.1:1/", processes=len(nodes))
    )
    backend = SimpleNamespace(
        nodes=list(nodes),
        ray=SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: here)),
    )
    return RayPool(backend, worker_slices(plan), Path("unused"))  # type: ignore[arg-type]


def _resources(*workers: dict[str, Any]) -> bytes:
    host = {"cpu": 50.0, "cpus": 2, "mem_used": 1, "mem_total": 2}
    return encode_frame("RESOURCES", {"workers": list(workers), "host": host})


async def _feed(pool: RayPool, node: Node, data: bytes) -> None:
    await pool._agent_frames(node, data)


def _closed_sustain() -> PhaseSummary:
    return PhaseSummary(duration_s=3.0, total=replace(EMPTY_OP, ok=100), ops={})


def test_agent_resource_frames_make_a_remote_busy_worker_generator_bound() -> None:
    """A worker sampled by its node's agent counts in the controller's samples and verdict."""
    head, other = _node("head-node", cpus=1), _node("other-node", cpus=1, address="127.0.0.2")
    pool = _pool("127.0.0.1", head, other)
    busy = {"pid": 7, "cpu": 98.0, "rss": 2000, "threads": 3}
    idle = {"pid": 7, "cpu": 20.0, "rss": 1000, "threads": 3}  # the same pid, another node
    anyio.run(_feed, pool, head, _resources(idle))
    anyio.run(_feed, pool, other, _resources(busy))
    assert pool.pids() == []
    sampler = Sampler(pool.pids(), None, pool.worker_samples)
    log = ResourceLog()
    for elapsed in (1.0, 2.0, 3.0):
        workers, target, host = sampler.sample()
        log.add(
            {"elapsed": elapsed, "phase": "sustain", "workers": workers, "target": target}
            | {"host": host}
        )
    assert workers == [
        {**idle, "node": "head-node"},
        {**busy, "node": "other-node", "off_host": True},
    ]
    figures = log.phase("sustain")
    assert (figures.busy.over, figures.busy.total) == (3, 3)
    assert figures.worker_cpu_peak == 98.0
    assert figures.worker_rss_peak == 3000
    # Only the head's worker is this host's CPU: the other node's is not in its shares.
    assert figures.host_shares()["workers_share_mean"] == round(20.0 / host["cpus"], 1)
    verdict = cpu_verdicts(
        False, _closed_sustain(), HostResources(), figures.busy, Tally(), figures.host_busy
    )
    assert verdict.generator_bound is True
    assert verdict.reason is not None
    assert "a worker process used >= 90% of a core in 100%" in verdict.reason


def test_late_or_lost_nodes_add_no_worker_samples() -> None:
    late, lost, fresh = _node("late"), _node("lost"), _node("fresh")
    pool = _pool("127.0.0.1", late, lost, fresh)
    for node in (late, lost, fresh):
        anyio.run(_feed, pool, node, _resources({"pid": 1, "cpu": 1.0, "rss": 1, "threads": 1}))
    came, workers = pool.latest["late"]
    pool.latest["late"] = (came - STALE_INTERVALS * pool.interval - 1.0, workers)
    pool.lost["lost"] = "node lost (test)"
    assert [w["node"] for w in pool.worker_samples()] == ["fresh"]


def test_coarsening_keeps_workers_of_different_nodes_with_the_same_pid_apart() -> None:
    def sample(cpu_a: float, cpu_b: float) -> dict[str, Any]:
        workers = [
            {"pid": 9, "cpu": cpu_a, "rss": 10, "threads": 1, "node": "a"},
            {"pid": 9, "cpu": cpu_b, "rss": 20, "threads": 1, "node": "b", "off_host": True},
        ]
        host = {"cpu": 10.0, "cpus": 2, "mem_used": 1, "mem_total": 2}
        return {"elapsed": 1.0, "phase": "sustain", "workers": workers, "host": host}

    merged = merge_samples(sample(10.0, 90.0), sample(30.0, 70.0), 1, 1)
    assert [(w["node"], w["cpu"]) for w in merged["workers"]] == [("a", 20.0), ("b", 80.0)]


def test_each_node_s_resources_are_running_figures_of_its_agent_s_frames() -> None:
    node, quiet = _node("busy-node"), _node("quiet-node")
    pool = _pool("127.0.0.1", node, quiet)
    one = {"pid": 1, "cpu": 40.0, "rss": 100, "threads": 1}
    two = {"pid": 2, "cpu": 30.0, "rss": 50, "threads": 1}
    anyio.run(_feed, pool, node, _resources(one, two))
    anyio.run(_feed, pool, node, _resources({**one, "cpu": 10.0, "rss": 300}))
    busy, idle = (n.resources for n in pool.nodes())
    assert busy == NodeResourceSummary(
        samples=2,
        workers_cpu_mean=40.0,
        workers_cpu_peak=70.0,
        workers_rss_peak=300,
        host_cpu_mean=50.0,
    )
    assert idle == NodeResourceSummary(samples=0)


TIMED_OUT = (
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)
"""Ray's own words when a node does not start in 30 s (a busy host): not producible at will."""

FAILING_CLUSTER = f"""
import subprocess, sys
import ray.cluster_utils

def _init(self, *args, **kwargs):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    raise Exception({TIMED_OUT!r})

ray.cluster_utils.Cluster.__init__ = _init
"""


def test_a_local_cluster_that_does_not_start_is_one_line_exit_3_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAILING_CLUSTER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "protobench", "run", "http-get", "--ray", "local:2", "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 3, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[-1].startswith(
        "protobench: error: --ray local:2: the local Ray cluster did not start: "
        "The current node timed out during startup."
    )
    assert "unexpected" not in stderr
    assert "try again" in lines[-1]
    assert len([line for line in lines if line.startswith("protobench: error:")]) == 1
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "time.sleep(120)" in " ".join(p.info["cmdline"] or [])
    ]
    assert leftovers == []
