"""Connections at scale: how many idle MQTT and WebSocket connections this machine holds.

mosquitto (the embedded target's config, its open-file limit raised as far as
the OS allows) and the embedded WebSocket server (``protobench serve ws``) are
started on loopback; ``--processes`` client processes (each raising its own
open-file limit) open ``--mqtt`` idle MQTT sessions (keepalive 60 s) and
``--ws`` WebSocket sessions (held open on ``/``), 64 connects in flight per
process, all processes at once (the connection storm), each session with the
task the engine would run for it. Sessions of index 20,000 and beyond connect
from 127.0.0.2, 127.0.0.3... (``source_addresses``, automatic) unless
``--source-addresses`` gives a count. Once every process holds its
connections for ``--hold`` seconds the bench prints, per protocol:

* connections held (and the errors of those that failed, by class);
* the storm rate: connections established per second (CONNACK for MQTT, the
  101 for WebSocket) from the first connect to the last, and the percentiles
  of one connect's time (TCP + CONNECT + CONNACK);
* client KB per connection: the client processes' RSS growth over the
  connections they hold (after a warm-up connection);
* server KB per connection: the broker's (or WS server's) RSS growth over them;
* the time it took.

A process can hold only as many connections as its RLIMIT_NOFILE allows; a
line says when the OS refused to raise it. mosquitto is one process: where
the hard limit cannot be raised (a container without CAP_SYS_RESOURCE),
``--brokers N`` starts N mosquitto processes and spreads the client processes
over them, to measure the client side beyond one broker's limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import uvloop

from protobench.engine.metrics import OpRecorder
from protobench.hostutil import fd_limit_note, free_port, raise_fd_limit
from protobench.protocols.base import SessionContext, StreamSession
from protobench.protocols.mqtt.plugin import MqttProtocol
from protobench.protocols.websocket.plugin import WebSocketProtocol
from protobench.targets.mqtt import (
    FD_MARGIN,
    MqttBrokerOptions,
    find_mosquitto,
    mosquitto_config,
)
from protobench.vocab.errors import OpError

IN_FLIGHT = 64
PER_PROCESS = 18_000


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def _context(kind: str, url: str, index: int, sources: int | None) -> SessionContext:
    if kind == "mqtt":
        plugin: Any = MqttProtocol()
        options = {"keepalive": "60s", "source_addresses": sources}
        op, params = "idle", {}
    else:
        plugin = WebSocketProtocol()
        options = {"source_addresses": sources}
        op, params = "subscribe", {"path": "/", "stamped": False}
    return SessionContext(
        target=url,
        group="c",
        op=op,
        index=index,
        worker=0,
        params=plugin.operations[op].model_validate(params),
        options=plugin.options.model_validate(options),
        timeout=20.0,
    )


async def _hold(
    kind: str, url: str, first: int, count: int, sources: int | None, pipe: Any
) -> None:
    plugin: Any = MqttProtocol() if kind == "mqtt" else WebSocketProtocol()
    me = psutil.Process()
    warm = await plugin.open_session(_context(kind, url, 10**9 + first, sources))
    await warm.close()
    await asyncio.sleep(0.2)
    rss0 = me.memory_info().rss
    limiter = asyncio.Semaphore(IN_FLIGHT)
    times: list[float] = []
    errors: Counter[str] = Counter()
    recorder = OpRecorder("hold")

    async def open_one(index: int) -> StreamSession | None:
        async with limiter:
            start = time.perf_counter()
            try:
                session = await plugin.open_session(_context(kind, url, index, sources))
            except OpError as exc:
                errors[f"{exc.error_class.value}: {exc.detail}"] += 1
                return None
            times.append(time.perf_counter() - start)
            return session  # type: ignore[no-any-return]

    pipe.send("ready")
    pipe.recv()
    began = time.monotonic()
    opened = await asyncio.gather(*(open_one(first + i) for i in range(count)))
    ended = time.monotonic()
    sessions = [s for s in opened if s is not None]
    tasks = [asyncio.create_task(s.run(recorder)) for s in sessions]
    pipe.send(
        {
            "held": len(sessions),
            "errors": dict(errors),
            "began": began,
            "ended": ended,
            "times": times,
            "rss": me.memory_info().rss - rss0,
        }
    )
    await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
    rss = me.memory_info().rss - rss0
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for session in sessions:
        await session.close()
    pipe.send({"rss": rss, "disconnects": dict(recorder.counters), "errors_after": recorder.errors})


def _child(kind: str, url: str, first: int, count: int, sources: int | None, pipe: Any) -> None:
    note = fd_limit_note(f"client process {first // max(count, 1)}", count + FD_MARGIN)
    if note:
        print(note, file=sys.stderr, flush=True)
    raise_fd_limit(count + FD_MARGIN)
    uvloop.run(_hold(kind, url, first, count, sources, pipe))


def _start_mosquitto(workdir: Path, connections: int) -> tuple[subprocess.Popen[bytes], str]:
    binary = find_mosquitto()
    if binary is None:
        raise SystemExit("mosquitto is not installed")
    note = fd_limit_note("mosquitto", connections + FD_MARGIN)
    if note:
        print(note, file=sys.stderr, flush=True)
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / "mosquitto.conf"
    conf.write_text(mosquitto_config("127.0.0.1", port, MqttBrokerOptions(sys_interval=10)))
    log = (workdir / "mosquitto.log").open("ab")
    proc = subprocess.Popen([binary, "-c", str(conf)], stdout=log, stderr=log)
    return proc, f"mqtt://127.0.0.1:{port}"


def _start_ws() -> tuple[subprocess.Popen[bytes], str]:
    command = [sys.executable, "-m", "protobench.targets.serve", "ws"]
    command += ["--host", "127.0.0.1", "--port", "0", "--announce"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    announcement = json.loads(proc.stdout.readline())
    return proc, str(announcement["url"])


def _wait_listening(url: str, within: float = 10) -> None:
    parts = urlsplit(url)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            socket.create_connection((parts.hostname, parts.port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{url} does not accept connections")


def measure(
    kind: str, total: int, processes: int, hold: float, sources: int | None, brokers: int = 1
) -> None:
    raise_fd_limit(total + FD_MARGIN)
    with tempfile.TemporaryDirectory(prefix="bench-connections-") as tmp:
        servers = [
            _start_mosquitto(Path(tmp) / str(b), math.ceil(total / brokers))
            if kind == "mqtt"
            else _start_ws()
            for b in range(brokers)
        ]
        try:
            for _, url in servers:
                _wait_listening(url)
            time.sleep(0.3)
            server_rss0 = sum(psutil.Process(proc.pid).memory_info().rss for proc, _ in servers)
            share = math.ceil(total / processes)
            fork = multiprocessing.get_context("fork")
            pipes = []
            children = []
            for p in range(processes):
                count = min(share, total - p * share)
                if count <= 0:
                    break
                ours, theirs = fork.Pipe()
                url = servers[p % brokers][1]
                child = fork.Process(
                    target=_child, args=(kind, url, p * share, count, sources, theirs)
                )
                child.start()
                pipes.append(ours)
                children.append(child)
            for pipe in pipes:
                assert pipe.recv() == "ready"
            for pipe in pipes:
                pipe.send("go")
            results = [pipe.recv() for pipe in pipes]
            time.sleep(hold)
            server_rss = (
                sum(psutil.Process(proc.pid).memory_info().rss for proc, _ in servers) - server_rss0
            )
            for pipe in pipes:
                pipe.send("close")
            after = [pipe.recv() for pipe in pipes]
            for child in children:
                child.join(30)
        finally:
            for proc, _ in servers:
                proc.terminate()
                proc.wait(10)
    held = sum(r["held"] for r in results)
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r["errors"])
    times = [t for r in results for t in r["times"]]
    span = max(r["ended"] for r in results) - min(r["began"] for r in results)
    client_rss = sum(a["rss"] for a in after)
    lost = sum(sum(a["disconnects"].values()) for a in after)
    print(
        f"{kind:5} {held:>7,} of {total:,} held ({processes} client processes, "
        f"{brokers} server process{'es' if brokers > 1 else ''}, "
        f"source addresses: {sources or 'auto'})"
    )
    print(
        f"      storm: {held / span:,.0f} connections/s over {span:.1f} s; connect time "
        f"p50 {percentile(times, 50) * 1e3:.1f} ms, p90 {percentile(times, 90) * 1e3:.1f} ms, "
        f"p99 {percentile(times, 99) * 1e3:.1f} ms, max {max(times, default=0) * 1e3:.1f} ms"
    )
    print(
        f"      memory: client {client_rss / max(held, 1) / 1024:.2f} KB/conn, "
        f"server {server_rss / max(held, 1) / 1024:.2f} KB/conn "
        f"(RSS growth over {held:,} connections held {hold:g} s)"
    )
    if lost:
        print(f"      lost while held: {lost}")
    for detail, n in errors.most_common(3):
        print(f"      {n:,} failed: {detail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mqtt", type=int, default=100_000, help="MQTT connections (0: none)")
    parser.add_argument("--ws", type=int, default=20_000, help="WebSocket connections (0: none)")
    parser.add_argument(
        "--processes", type=int, default=0, help=f"client processes (0: one per {PER_PROCESS:,})"
    )
    parser.add_argument("--hold", type=float, default=5.0, help="seconds to hold them")
    parser.add_argument("--source-addresses", type=int, default=None)
    parser.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="MQTT brokers (mosquitto processes), client processes spread over them: one "
        "process holds no more connections than its open-file limit",
    )
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    for kind, total in (("mqtt", args.mqtt), ("ws", args.ws)):
        if total > 0:
            processes = args.processes or math.ceil(total / PER_PROCESS)
            started = time.monotonic()
            brokers = args.brokers if kind == "mqtt" else 1
            measure(kind, total, processes, args.hold, args.source_addresses, brokers)
            print(f"      took {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
