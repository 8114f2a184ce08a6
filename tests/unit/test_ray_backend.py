"""The Ray backend without a cluster: spec parsing, slices per node, refusals, a missing extra."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

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
from protobench.engine.distributed.pool import assign
from protobench.engine.plan import Overrides, resolve, worker_slices
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
