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
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from protobench.engine.distributed.agent import AGENT
from protobench.engine.distributed.cluster import Node, RayBackend, clock_warnings
from protobench.engine.frames import FrameDecoder, FrameError
from protobench.engine.plan import WorkerSlice
from protobench.engine.pool import worker_summary
from protobench.engine.report_model import NodeEntry, NodeResources, WorkerEntry

SHUTDOWN_GRACE = 10.0


class RayHandle:
    """One worker on a node, with what the controller reads of a ``WorkerHandle``."""

    def __init__(self, index: int, node: Node, log_path: Path) -> None:
        self.index = index
        self.node = node
        self.log_path = log_path
        self.pid: int | None = None
        self.hello: dict[str, Any] | None = None
        self.said_bye = False
        self.error: str | None = None
        self.exit_code: int | None = None
        self.gone = False
        self.tail = ""
        self.decoder = FrameDecoder()

    def log_tail(self) -> str:
        return self.tail


Frame = tuple[RayHandle | None, str, Any]


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


class RayPool:
    """Start, talk to and stop the workers of one run on the nodes of a :class:`RayBackend`."""

    def __init__(self, backend: RayBackend, slices: list[WorkerSlice], log_dir: Path) -> None:
        self.backend = backend
        self.slices = slices
        self.log_dir = log_dir
        self.interval = slices[0].plan.interval if slices else 1.0
        self.assigned = assign(slices, backend.nodes)
        self.nodes_used = [n for n in backend.nodes if self.assigned[n.node_id]]
        self.handles: list[RayHandle] = []
        for node in self.nodes_used:
            node.workers = [s.worker for s in self.assigned[node.node_id]]
            for spec in self.assigned[node.node_id]:
                path = log_dir / f"worker-{spec.worker}.log"
                self.handles.append(RayHandle(spec.worker, node, path))
        self.by_index = {h.index: h for h in self.handles}
        self.resources: dict[str, list[dict[str, Any]]] = {n.node_id: [] for n in self.nodes_used}
        self.lost: dict[str, str] = {}
        self._group: TaskGroup | None = None
        self._send, self._receive = anyio.create_memory_object_stream[Frame](10_000)
        self._control_send, self._control_receive = anyio.create_memory_object_stream[
            tuple[str, Any]
        ](1_000)
        self._streams = 0

    async def __aenter__(self) -> RayPool:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._forward_control)
        for warning in clock_warnings(self.backend.nodes, self.interval):
            await self._send.send((None, "NOTICE", {"kind": "clock", "message": warning}))
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

    @property
    def live(self) -> set[int]:
        return {h.index for h in self.handles if not h.gone and not h.said_bye}

    def pids(self) -> list[int]:
        """The worker processes on this machine (the others are sampled by their agents)."""
        here = self.backend.ray.util.get_node_ip_address()
        local_hosts = {n.node_id for n in self.nodes_used if n.address == here}
        return [h.pid for h in self.handles if h.pid is not None and h.node.node_id in local_hosts]

    def broadcast(self, kind: str, payload: Any) -> None:
        """Queue a control frame for every node; ``GO``'s monotonic start becomes wall-clock."""
        if kind == "GO":
            payload = {"start_wall": time.time() + payload["start_at"] - time.monotonic()}
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
            self._control_send.send_nowait((kind, payload))

    async def _forward_control(self) -> None:
        async for kind, payload in self._control_receive:
            text = json.dumps(payload)
            refs = [
                n.agent.control.remote(kind, text)
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
                    await self._worker_output(self.by_index[index], data)
        except Exception as exc:  # a Ray error: the agent or its node is gone
            reason = f"node {node.node_id[:8]} ({node.address}) lost: {type(exc).__name__}"
            self.lost[node.node_id] = reason
            await self._send.send((None, "NOTICE", {"kind": "node", "message": reason}))
        for handle in self.handles:
            if handle.node is node and not handle.gone:
                if not handle.said_bye and handle.error is None:
                    handle.error = self.lost.get(node.node_id, "ended without a word")
                await self._gone(handle)
        self._streams -= 1
        if self._streams == 0:
            await self._send.aclose()

    async def _worker_output(self, handle: RayHandle, data: bytes) -> None:
        try:
            frames = handle.decoder.feed(data)
        except FrameError as exc:
            handle.error = f"broken frames: {exc}"
            return
        for kind, payload in frames:
            if kind == "HELLO":
                handle.hello = payload
                handle.pid = payload.get("pid")
            elif kind == "BYE":
                handle.said_bye = True
            elif kind == "ERROR":
                handle.error = payload.get("message", "unknown error")
            await self._send.send((handle, kind, payload))

    async def _agent_frames(self, node: Node, data: bytes) -> None:
        for kind, payload in FrameDecoder().feed(data):
            if kind == "RESOURCES":
                self.resources[node.node_id].append(payload)
            elif kind == "EXIT":
                handle = self.by_index[payload["worker"]]
                handle.exit_code = payload["exit_code"]
                handle.tail = payload["log_tail"]
                if not handle.said_bye and handle.error is None:
                    handle.error = f"exited with code {handle.exit_code}"
                await self._gone(handle)

    async def _gone(self, handle: RayHandle) -> None:
        if not handle.gone:
            handle.gone = True
            await self._send.send((handle, "GONE", None))

    async def wait_hello(self, stop: anyio.Event) -> list[dict[str, Any]]:
        """Wait until every worker said HELLO or is gone; return the HELLO payloads."""
        while not stop.is_set():
            if not [h for h in self.handles if h.hello is None and not h.gone]:
                break
            await anyio.sleep(0.02)
        return [h.hello for h in self.handles if h.hello is not None]

    async def frames(self) -> AsyncIterator[Frame]:
        """Every frame after HELLO (and NOTICEs), then GONE per worker; ends when all are gone."""
        async for frame in self._receive:
            if frame[1] != "HELLO":
                yield frame

    async def shutdown(self) -> None:
        """Stop every node's workers (the agents escalate to SIGTERM, SIGKILL)."""
        refs = [n.agent.shutdown.remote() for n in self.nodes_used if n.node_id not in self.lost]
        with anyio.move_on_after(SHUTDOWN_GRACE):
            for ref in refs:
                with contextlib.suppress(Exception):
                    await ref

    def summary(self) -> list[WorkerEntry]:
        return [replace(worker_summary(h, h.exit_code), node=h.node.node_id) for h in self.handles]

    def nodes(self) -> list[NodeEntry]:
        """The nodes of the run for the report: identity, versions, clock, workers, resources."""
        out = []
        for node in self.nodes_used:
            samples = self.resources[node.node_id]
            cpu = [sum(w["cpu"] for w in s["workers"]) for s in samples]
            rss = [sum(w["rss"] for w in s["workers"]) for s in samples]
            host = [s["host"]["cpu"] for s in samples]
            out.append(
                replace(
                    node.describe(),
                    lost=self.lost.get(node.node_id),
                    resources=NodeResources(
                        samples=len(samples),
                        workers_cpu_mean=round(sum(cpu) / len(cpu), 1) if cpu else None,
                        workers_cpu_peak=max(cpu, default=None),
                        workers_rss_peak=max(rss, default=None),
                        host_cpu_mean=round(sum(host) / len(host), 1) if host else None,
                    ),
                )
            )
        return out


class RayPoolFactory:
    """Makes the controller's pool on a backend: ``factory(slices, log_dir)``."""

    def __init__(self, backend: RayBackend) -> None:
        self.backend = backend

    def __call__(self, slices: list[WorkerSlice], log_dir: Path) -> RayPool:
        return RayPool(self.backend, slices, log_dir)
