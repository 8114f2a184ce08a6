"""Connecting to a Ray cluster and starting one :class:`~.agent.NodeAgent` per node.

``--ray`` takes ``auto`` (``RAY_ADDRESS`` or the cluster started on this
machine), ``ADDRESS`` (``host:port`` of the head), or ``local:N`` (a throwaway
``ray.cluster_utils.Cluster`` of N simulated nodes on this machine, every
listener and connection on 127.0.0.1). :class:`RayBackend` checks the nodes
(same Python and protobench everywhere, no embedded target with remote nodes),
measures each node's clock offset with a ping exchange and hands the pool its
agents. Ray's own output never reaches the terminal (``log_to_driver`` off).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from protobench.engine.distributed.agent import NodeAgent
from protobench.engine.report_model import NodeEntry
from protobench.hostutil import is_loopback_host
from protobench.vocab.exceptions import BadInput, Incomplete

MISSING = "--ray needs `pip install 'protobench[ray]'`"
PINGS = 5
REACH_TIMEOUT = 5.0
AGENT_TIMEOUT = 120.0
"""Seconds the nodes' agents have to start and say who they are."""
CLOCK_WARN_FRACTION = 0.05
"""A node whose clock is off by more than this fraction of the interval is reported."""
SIMULATED_OBJECT_STORE = 80 * 1024 * 1024
LOOPBACK_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray maps 127.0.0.1 to the host's routable address unless it believes it runs
    # without clusters; this keeps the driver's bootstrap address on loopback.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
}


class RayBackendError(BadInput):
    """The cluster cannot run this plan (one line for the user)."""


class ClusterStartError(Incomplete):
    """The cluster did not start or did not answer in time (one line: what, and what to try)."""


def parse_spec(spec: str) -> tuple[str | None, int]:
    """``auto`` -> (None, 0); ``local:N`` -> (None, N); an address -> (address, 0)."""
    if spec == "auto":
        return None, 0
    if spec.startswith("local:"):
        count = spec.partition(":")[2]
        if not count.isdigit() or not 1 <= int(count) <= 16:
            raise RayBackendError(f"--ray {spec}: expected local:N with N from 1 to 16")
        return None, int(count)
    if ":" not in spec:
        raise RayBackendError(f"--ray {spec}: expected auto, HOST:PORT or local:N")
    return spec, 0


def import_ray() -> Any:
    try:
        import ray  # noqa: PLC0415 - the optional extra loads only with --ray
    except ImportError:
        raise RayBackendError(MISSING) from None
    return ray


def loopback_environment(base: Path) -> dict[str, str]:
    """Environment variables that keep a simulated cluster on loopback and its files in ``base``.

    They must be in ``os.environ`` before Ray is imported.
    """
    ray_tmp = base / "ray"
    ray_tmp.mkdir(parents=True, exist_ok=True)
    return {**LOOPBACK_ENV, "RAY_TMPDIR": str(base)}


class LocalCluster:
    """N simulated Ray nodes on this machine, on 127.0.0.1 only; the driver is connected."""

    def __init__(self, nodes: int, base: Path) -> None:
        os.environ.update(loopback_environment(base))
        ray = import_ray()
        from ray.cluster_utils import Cluster  # noqa: PLC0415

        keep_on_loopback(ray)

        cpus = max(1, len(os.sched_getaffinity(0)) // nodes)
        common: dict[str, Any] = {
            "node_ip_address": "127.0.0.1",
            "num_cpus": cpus,
            "object_store_memory": SIMULATED_OBJECT_STORE,
        }
        head = {**common, "include_dashboard": False, "temp_dir": str(base / "t")}
        before = _children()
        cluster: Cluster | None = None
        try:
            cluster = Cluster(initialize_head=True, head_node_args=head)
            self.extra = [cluster.add_node(**common) for _ in range(nodes - 1)]
            cluster.wait_for_nodes()
        except Exception as exc:  # Ray raises bare Exceptions (a node's startup timeout)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.shutdown()  # type: ignore[no-untyped-call]
            _kill_new_children(before)
            raise ClusterStartError(
                f"--ray local:{nodes}: the local Ray cluster did not start: {_first_line(exc)} "
                "(a busy host starts it slowly: try again on a quieter host, with fewer nodes, "
                "or start one with `ray start --head` and give --ray auto)"
            ) from None
        self.cluster = cluster
        connect(ray, self.cluster.address, loopback=True)

    def remove(self, index: int) -> None:
        """Kill the ``index``-th added node (not the head, where the driver is)."""
        self.cluster.remove_node(self.extra.pop(index), allow_graceful=False)

    def shutdown(self) -> None:
        ray = import_ray()
        ray.shutdown()
        self.cluster.shutdown()  # type: ignore[no-untyped-call]


def _first_line(exc: BaseException) -> str:
    """The first sentence-bearing line of ``exc``'s message (Ray's run on for lines)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def _kill_new_children(before: set[int]) -> None:
    """Kill the processes a failed cluster start left (children not there ``before``)."""
    new = [c for c in psutil.Process().children(recursive=True) if c.pid not in before]
    for child in new:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(new, timeout=5)


def check_reachable(address: str) -> None:
    """Fail at once when nothing listens at the head's address (Ray would retry for minutes)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT):
            pass
    except (OSError, ValueError) as exc:
        raise RayBackendError(f"--ray {address}: no Ray head answers there ({exc})") from None


def keep_on_loopback(ray: Any) -> None:
    """Stop Ray from replacing 127.0.0.1 by this host's routable address when it connects.

    Ray reads the flag at import time from ``LOOPBACK_ENV``; set it too when Ray was
    imported before that environment.
    """
    from ray._private import ray_constants  # noqa: PLC0415

    ray_constants.ENABLE_RAY_CLUSTER = False


def connect(ray: Any, address: str | None, loopback: bool = False) -> None:
    """``ray.init`` quietly: no raylet lines on stdout, no Ray logging on stderr."""
    options: dict[str, Any] = {
        "address": address or "auto",
        "log_to_driver": False,
        "logging_level": logging.ERROR,
        "configure_logging": True,
        "include_dashboard": False,
    }
    if loopback:
        options["_node_ip_address"] = "127.0.0.1"
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayBackendError(f"--ray: cannot connect to the cluster: {exc}") from None


@dataclass
class Node:
    """One node of the cluster and its agent."""

    node_id: str
    address: str
    agent: Any
    info: dict[str, Any]
    clock_offset: float = 0.0
    workers: list[int] = field(default_factory=list)

    @property
    def cpus(self) -> int:
        return int(self.info.get("cpus", 1))

    def describe(self) -> NodeEntry:
        return NodeEntry(
            id=self.node_id,
            host=self.info.get("host"),
            address=self.address,
            cpus=self.cpus,
            python=self.info.get("python"),
            ray=self.info.get("ray"),
            protobench=self.info.get("protobench"),
            clock_offset=round(self.clock_offset, 6),
            workers=list(self.workers),
        )


class RayBackend:
    """A connected cluster and one agent per alive node with CPUs."""

    def __init__(self, spec: str, base: Path | None = None) -> None:
        address, simulated = parse_spec(spec)
        self.local: LocalCluster | None = None
        self._temp: tempfile.TemporaryDirectory[str] | None = None
        if simulated:
            if base is None:
                self._temp = tempfile.TemporaryDirectory(prefix="pb-ray-")
                base = Path(self._temp.name)
            self.local = LocalCluster(simulated, base)
            self.ray = import_ray()
        else:
            self.ray = import_ray()
            loopback = address is not None and is_loopback_host(address.rpartition(":")[0])
            if loopback:
                keep_on_loopback(self.ray)
            if not self.ray.is_initialized():
                if address is not None:
                    check_reachable(address)
                connect(self.ray, address, loopback)
        self.nodes = self._start_agents()

    def _start_agents(self) -> list[Node]:
        ray = self.ray
        from ray.util.scheduling_strategies import (  # noqa: PLC0415
            NodeAffinitySchedulingStrategy,
        )

        actor = ray.remote(num_cpus=0, max_restarts=0)(NodeAgent)
        nodes = []
        for entry in ray.nodes():
            if not entry.get("Alive") or not entry.get("Resources", {}).get("CPU"):
                continue
            strategy = NodeAffinitySchedulingStrategy(entry["NodeID"], soft=False)
            agent = actor.options(scheduling_strategy=strategy).remote()
            nodes.append(Node(entry["NodeID"], entry["NodeManagerAddress"], agent, {}))
        if not nodes:
            raise RayBackendError("--ray: the cluster has no alive node with CPUs")
        try:
            infos = ray.get([n.agent.info.remote() for n in nodes], timeout=AGENT_TIMEOUT)
        except TimeoutError:
            for node in nodes:
                ray.kill(node.agent)
            raise ClusterStartError(
                f"--ray: the agents of the nodes did not start within {AGENT_TIMEOUT:g} s "
                "(a busy cluster or host: try again, or with fewer nodes)"
            ) from None
        for node, info in zip(nodes, infos, strict=True):
            node.info = info
            node.info["cpus"] = int(
                next(e for e in ray.nodes() if e["NodeID"] == node.node_id)["Resources"]["CPU"]
            )
        check_versions(nodes)
        for node in nodes:
            node.clock_offset = self._clock_offset(node)
        return nodes

    def _clock_offset(self, node: Node) -> float:
        """The node's wall clock minus ours, from the ping with the shortest round trip."""
        best: tuple[float, float] | None = None
        for _ in range(PINGS):
            sent = time.time()
            remote = float(self.ray.get(node.agent.clock.remote()))
            received = time.time()
            trip = received - sent
            if best is None or trip < best[0]:
                best = (trip, remote - (sent + received) / 2)
        assert best is not None
        return best[1]

    def check_plan(self, embedded: bool) -> None:
        """Refuse an embedded target when some node is not this machine."""
        if not embedded:
            return
        here = self.ray.util.get_node_ip_address()
        remote = sorted({n.address for n in self.nodes if n.address != here})
        if remote:
            raise RayBackendError(
                "--ray: an embedded target would run on this machine only, but nodes "
                f"{', '.join(remote)} are remote: start the target yourself and give --target"
            )

    def close(self) -> None:
        for node in self.nodes:
            self.ray.kill(node.agent)
        if self.local is not None:
            self.local.shutdown()
        if self._temp is not None:
            self._temp.cleanup()


def clock_warnings(nodes: list[Node], interval: float) -> list[str]:
    """One line per node whose clock is off by more than 5 % of the interval."""
    limit = CLOCK_WARN_FRACTION * interval
    return [
        f"node {n.node_id[:8]} ({n.address}): clock off by {n.clock_offset * 1e3:.1f} ms, "
        f"more than 5% of the {interval:g} s interval"
        for n in nodes
        if abs(n.clock_offset) > limit
    ]


def check_versions(nodes: list[Node]) -> None:
    """Refuse nodes that run different Python or protobench versions (all listed)."""
    for key in ("python", "protobench"):
        values = {n.info.get(key) for n in nodes}
        if len(values) > 1:
            listing = ", ".join(f"{n.address} {n.info.get(key)}" for n in nodes)
            raise RayBackendError(f"--ray: the nodes run different {key} versions: {listing}")


def open_backend(spec: str, embedded: bool) -> RayBackend:
    """Connect for ``--ray SPEC`` and check that the cluster can run the plan."""
    backend = RayBackend(spec)
    try:
        backend.check_plan(embedded)
    except RayBackendError:
        backend.close()
        raise
    return backend
