"""The worker pool of a run on a Ray cluster, driven by the controller like ``WorkerPool``.

Slices go to the nodes in proportion to their CPUs and keep their global worker
indices, so the aggregator merges them unchanged. Each node's agent streams
its workers' stdout; the frames are decoded here per worker. Control frames go
to every agent through an actor method; ``GO`` travels as a wall-clock instant.
A worker that ends is ``GONE`` as today; an agent or node that dies ends its
stream with a Ray error, and every worker of that node still running is
``GONE`` with that error, the others go on. :meth:`RayPool.frames` also yields
``NOTICE`` frames (a clock offset above 5 % of the interval, a lost node) and
keeps each node's resource samples for :meth:`RayPool.nodes`.

Every worker is sampled by the agent of its node, none by the controller
(:meth:`RayPool.pids` is empty): :meth:`RayPool.worker_samples` gives the
controller's sampler the latest sample of each node's workers, each marked
with its ``node`` (and ``off_host`` when that node is another machine, whose
CPU is not this host's), so the generator-bound verdict is judged on every
worker wherever it runs.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import anyio
from anyio.abc import TaskGroup

from protobench.engine.distributed.agent import AGENT
from protobench.engine.distributed.cluster import Node, RayBackend, clock_warnings
from protobench.engine.distributed.node_resources import NodeResources
from protobench.engine.events import ProcessSample
from protobench.engine.frames import FrameDecoder, FrameKind
from protobench.engine.plan import WorkerSlice
from protobench.engine.pool_base import BaseHandle, BasePool
from protobench.engine.report_model import NodeEntry, WorkerEntry

SHUTDOWN_GRACE = 10.0
STALE_INTERVALS = 2.5
"""A node's worker sample older than this many intervals is not used (its agent is late)."""


class RayHandle(BaseHandle):
    """One worker on a node; its pid comes with its ``HELLO``, its log's tail with its end."""

    def __init__(self, index: int, node: Node, log_path: Path) -> None:
        super().__init__(index, log_path)
        self.node = node
        self.tail = ""

    def take(self, kind: FrameKind, payload: Any) -> bool:
        if kind is FrameKind.HELLO:
            self.pid = payload.get("pid")
        return super().take(kind, payload)

    def log_tail(self) -> str:
        return self.tail


def assign(slices: list[WorkerSlice], nodes: list[Node]) -> dict[str, list[WorkerSlice]]:
    """Deal the slices to the nodes in proportion to their CPUs (largest remainder)."""
    total = sum(n.cpus for n in nodes) or 1
    exact = [len(slices) * n.cpus / total for n in nodes]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(nodes)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in by_remainder[: len(slices) - sum(counts)]:
        counts[i] += 1
    out: dict[str, list[WorkerSlice]] = {}
    position = 0
    for node, count in zip(nodes, counts, strict=True):
        out[node.node_id] = slices[position : position + count]
        position += count
    return out


class RayPool(BasePool[RayHandle]):
    """Start, talk to and stop the workers of one run on the nodes of a :class:`RayBackend`."""

    def __init__(self, backend: RayBackend, slices: list[WorkerSlice], log_dir: Path) -> None:
        super().__init__()
        self.backend = backend
        self.slices = slices
        self.log_dir = log_dir
        self.interval = slices[0].plan.interval if slices else 1.0
        self.assigned = assign(slices, backend.nodes)
        self.nodes_used = [n for n in backend.nodes if self.assigned[n.node_id]]
        for node in self.nodes_used:
            node.workers = [s.worker for s in self.assigned[node.node_id]]
            for spec in self.assigned[node.node_id]:
                path = log_dir / f"worker-{spec.worker}.log"
                self.handles.append(RayHandle(spec.worker, node, path))
        self.by_index = {h.index: h for h in self.handles}
        self.resources = {n.node_id: NodeResources() for n in self.nodes_used}
        self.latest: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        """Each node's newest worker samples and when they came (monotonic)."""
        self.here = backend.ray.util.get_node_ip_address()
        self.lost: dict[str, str] = {}
        self._group: TaskGroup | None = None
        self._streams = 0

    async def __aenter__(self) -> RayPool:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._forward_control)
        for warning in clock_warnings(self.backend.nodes, self.interval):
            await self._send.send((None, FrameKind.NOTICE, {"kind": "clock", "message": warning}))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()
        assert self._group is not None
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(exc_type, exc, tb)

    async def start(self, target: str) -> None:
        """Start every node's workers with their slices (as JSON) and the target."""
        assert self._group is not None
        self._streams = len(self.nodes_used)
        for node in self.nodes_used:
            slices_json = json.dumps([s.to_dict() for s in self.assigned[node.node_id]])
            stream = node.agent.run.options(num_returns="streaming").remote(
                slices_json, target, str(self.log_dir), self.interval
            )
            self._group.start_soon(self._read, node, stream)

    def pids(self) -> list[int]:
        """None: every worker is sampled by its node's agent (see :meth:`worker_samples`)."""
        return []

    def worker_samples(self) -> list[ProcessSample]:
        """The latest sample of every worker of the nodes still heard from, marked with its node."""
        now = time.monotonic()
        out: list[ProcessSample] = []
        for node in self.nodes_used:
            came, workers = self.latest.get(node.node_id, (0.0, []))
            if node.node_id in self.lost or now - came > STALE_INTERVALS * self.interval:
                continue
            for worker in workers:
                sample = cast(ProcessSample, dict(worker))
                sample["node"] = node.node_id
                if node.address != self.here:
                    sample["off_host"] = True
                out.append(sample)
        return out

    def broadcast(self, kind: FrameKind, payload: Any) -> None:
        """Queue a control frame for every node; ``GO``'s monotonic start becomes wall-clock."""
        if kind is FrameKind.GO:
            payload = {"start_wall": time.time() + payload["start_at"] - time.monotonic()}
        super().broadcast(kind, payload)

    async def _forward_control(self) -> None:
        """Send every broadcast frame, in order, to the agents of the nodes not lost."""
        async for kind, payload in self._control_receive:
            text = json.dumps(payload)
            refs = [
                n.agent.control.remote(kind.value, text)
                for n in self.nodes_used
                if n.node_id not in self.lost
            ]
            for ref in refs:
                with contextlib.suppress(Exception):
                    await ref

    async def _read(self, node: Node, stream: Any) -> None:
        try:
            async for ref in stream:
                index, data = await ref
                if index == AGENT:
                    await self._agent_frames(node, data)
                else:
                    await self._output(self.by_index[index], data)
        except Exception as exc:  # a Ray error: the agent or its node is gone
            reason = f"node {node.node_id[:8]} ({node.address}) lost: {type(exc).__name__}"
            self.lost[node.node_id] = reason
            await self._send.send((None, FrameKind.NOTICE, {"kind": "node", "message": reason}))
        for handle in self.handles:
            if handle.node is node and not handle.gone:
                handle.fail(self.lost.get(node.node_id, "ended without a word"))
                await self._gone(handle)
        self._streams -= 1
        if self._streams == 0:
            await self._send.aclose()

    async def _agent_frames(self, node: Node, data: bytes) -> None:
        for kind, payload in FrameDecoder().feed(data):
            if kind is FrameKind.RESOURCES:
                self.resources[node.node_id].add(payload)
                self.latest[node.node_id] = (time.monotonic(), payload["workers"])
            elif kind is FrameKind.EXIT:
                handle = self.by_index[payload["worker"]]
                handle.exit_code = payload["exit_code"]
                handle.tail = payload["log_tail"]
                handle.fail(f"exited with code {handle.exit_code}")
                await self._gone(handle)

    def drop(self, handle: RayHandle, reason: str) -> None:
        """Have ``handle``'s agent kill its worker now; its ``EXIT`` follows."""
        handle.fail(f"{reason}; killed")
        if handle.node.node_id not in self.lost:
            handle.node.agent.kill.remote([handle.index])

    def abort(self, reason: str = "killed: the run was stopped at once") -> None:
        """Have every agent kill its workers still running now (a second interrupt)."""
        for handle in self.handles:
            if not handle.gone:
                handle.fail(reason)
        for node in self.nodes_used:
            if node.node_id not in self.lost:
                node.agent.kill.remote(node.workers)

    async def shutdown(self) -> None:
        """Stop every node's workers (the agents escalate to SIGTERM, SIGKILL)."""
        refs = [n.agent.shutdown.remote() for n in self.nodes_used if n.node_id not in self.lost]
        with anyio.move_on_after(SHUTDOWN_GRACE):
            for ref in refs:
                with contextlib.suppress(Exception):
                    await ref

    def summary(self) -> list[WorkerEntry]:
        return [replace(h.entry(h.exit_code), node=h.node.node_id) for h in self.handles]

    def nodes(self) -> list[NodeEntry]:
        """The nodes of the run for the report: identity, versions, clock, workers, resources."""
        return [
            replace(
                node.describe(),
                lost=self.lost.get(node.node_id),
                resources=self.resources[node.node_id].summary(),
            )
            for node in self.nodes_used
        ]


class RayPoolFactory:
    """Makes the controller's pool on a backend: ``factory(slices, log_dir)``."""

    def __init__(self, backend: RayBackend) -> None:
        self.backend = backend

    def __call__(self, slices: list[WorkerSlice], log_dir: Path) -> RayPool:
        return RayPool(self.backend, slices, log_dir)
