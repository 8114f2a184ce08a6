"""protobench's MQTT client against paho-mqtt (and mqtt-benchmark when installed), one core each.

mosquitto runs pinned to ``--broker-core`` with a generated config
(persistence off, ``sys_interval 1``); every generator runs pinned to
``--client-core`` with ``--clients`` connections publishing ``--size``-byte
messages back-to-back for ``--duration`` seconds, ``--rounds`` times:

* ``qos0``: QoS 0 publishes. protobench's rate is the report's sustain
  ``publish`` throughput (one worker process, every exchange recorded).
* ``qos1``: QoS 1 with 20 messages in flight per connection (protobench:
  ``count = clients x 20, inflight = 20``; paho: ``max_inflight_messages_set(20)``).
* ``sub``: the CPU cost of receiving: one subscriber process (pinned to the
  client core) with one subscribe session receives QoS 0 messages that
  protobench publishes (4 sessions, on the broker's core, back-to-back or at
  ``--sub-rate``); CPU µs per message is the subscriber's user + system time
  over the messages it counted in ``--duration`` seconds once the traffic
  flows (start-up is excluded: the window opens 1 s after the first message).
  The log line also gives the subscriber's busy share of its core and the
  messages per read() system call (``syscr`` of ``/proc/self/io``), because
  they explain the figure: the feeder shares the broker's core and does not
  saturate the subscriber, which then wakes up for nearly every message and
  pays a wakeup, an ``epoll_wait`` and a ``read`` for each; on a quiet 2-core
  machine that per-wakeup cost, mostly system time, is most of the figure.
  On a busy machine the subscriber wakes up later and reads more per call,
  so its figure drops: read it with the messages per read. The busy share
  and the messages per read were added to say what the figure measures; the
  measurement itself is unchanged.
* ``sub xN`` (``--fanout N``, default 4; 1 leaves the row out): the same
  with N subscribe sessions (N connections) in the one subscriber process,
  each receiving every message, as in a fan-out run where one worker holds
  many subscribers. Its messages per read vary from run to run (about 1 to
  about 45 were seen on a shared 2-core machine, with the figure going
  from about 6.6 down to about 1.5 µs); read the two together. Neither row
  delays reads: every message's latency is stamped when its bytes are read.
  Both rows print the subscriber's e2e p50 too.
* ``--sub-variants``: only the one-subscription row, once per subscriber socket
  setting (:data:`SUB_VARIANTS`), interleaved in each round, with the load
  average: how SO_RCVBUF, TCP_NODELAY and SO_RCVLOWAT change the CPU per
  message and the e2e p50 (issue 22 §3).

Every publish run is cross-checked against the broker: the delta of
``$SYS/broker/publish/messages/received`` over the run must cover the
messages the generator counted (it also includes warmup and drain).

mqtt-benchmark (Go) is used when ``mqtt-benchmark`` is on PATH or in
``~/go/bin``. The Go module proxy answers 403 for github.com/krylovsk/mqtt-benchmark,
so ``go install`` fails; build it from a clone of its repository instead
(``go build -o ~/go/bin/mqtt-benchmark .``: its dependencies come from the proxy).
It keeps one message in flight per client (QoS 1 waits for each PUBACK) and its
rate is its own ``total_msgs_per_sec`` (connects included); its CPU is the
process's user + system time over the messages it counted.

Run it as ``bench/mqtt_vs_peers [--duration 10] [--rounds 2]``. The machine
may be shared: read the spread between rounds before the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import psutil
import uvloop
from paho.mqtt.enums import CallbackAPIVersion

from protobench.engine.metrics import OpRecorder
from protobench.protocols.base import SessionContext, StreamSession
from protobench.protocols.mqtt.options import MqttOptions, SubscribeParams
from protobench.protocols.mqtt.plugin import MqttProtocol

REPO = Path(__file__).resolve().parent.parent
PYTHON = str(REPO / ".venv" / "bin" / "python")
SYS_TOPIC = "$SYS/broker/publish/messages/received"


# --------------------------------------------------------------------------- broker


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_mosquitto(directory: Path, core: int) -> tuple[subprocess.Popen[bytes], int]:
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    port = free_port()
    lines = ["persistence false", "sys_interval 1", "log_dest none", "set_tcp_nodelay true"]
    if os.geteuid() == 0:
        lines.append("user root")
    lines += [f"listener {port} 127.0.0.1", "allow_anonymous true", "max_queued_messages 100000"]
    conf = directory / "mosquitto.conf"
    conf.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        ["taskset", "-c", str(core), binary, "-c", str(conf)], start_new_session=True
    )
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.02)
    raise SystemExit("mosquitto did not start")


class SysWatcher:
    """The broker's $SYS received-publish counter, followed with paho in a thread."""

    def __init__(self, port: int) -> None:
        self.value = -1
        self.updated = threading.Event()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id="bench-sys")
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(SYS_TOPIC)
        self.client.loop_start()

    def _message(self, client: Any, userdata: Any, msg: Any) -> None:
        self.value = int(msg.payload)
        self.updated.set()

    def fresh(self) -> int:
        """The counter after its next update (the broker publishes it every second)."""
        self.updated.clear()
        self.updated.wait(3)
        return self.value

    def stop(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


# --------------------------------------------------------------------------- generators


def broker_cpu(process: psutil.Process) -> float:
    """The broker's user + system CPU seconds so far."""
    times = process.cpu_times()
    return float(times.user + times.system)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_protobench(
    url: str, mode: str, args: argparse.Namespace, directory: Path
) -> dict[str, Any]:
    qos = 0 if mode == "qos0" else 1
    inflight = 1 if qos == 0 else 20
    profile = directory / f"bench-{mode}.toml"
    profile.write_text(
        f'name = "bench-{mode}"\nprotocol = "mqtt"\n[[group]]\nop = "publish"\n'
        f"count = {args.clients * inflight}\ninflight = {inflight}\nqos = {qos}\n"
        f'size = {args.size}\ntopic = "bench/{{client}}"\n'
    )
    before = cpu_seconds()
    done = subprocess.run(
        ["taskset", "-c", str(args.client_core), PYTHON, "-m", "protobench", "run", str(profile),
         "--target", url, "--processes", "1", "--duration", f"{args.duration}s",
         "--warmup", "2s", "--json", "--quiet", "--snapshots-dir", str(directory / "snaps")],
        capture_output=True, text=True, check=True, timeout=args.duration + 120,
    )  # fmt: skip
    report = json.loads(done.stdout)
    sustain = report["phases"]["sustain"]["ops"]["publish"]
    total = sum(p["ops"].get("publish", {}).get("ok", 0) for p in report["phases"].values())
    cpu = report["resources"]["generator"]["worker_cpu_mean"] / 100 * args.duration
    return {
        "rate": sustain["throughput"],
        "counted": total,
        "errors": sustain["errors"],
        "cpu_us": cpu / max(1, sustain["ok"]) * 1e6,
        "p50_us": sustain["latency_us"].get("p50"),
        "p99_us": sustain["latency_us"].get("p99"),
        "all_cpu_s": cpu_seconds() - before,
    }


def paho_publisher(port: int, clients: int, qos: int, size: int, duration: float) -> None:
    """Child mode: ``clients`` paho clients publishing back-to-back; prints the counts as JSON."""
    counts = [0] * clients
    stop = time.monotonic() + duration
    payload = bytes(size)

    def on_publish(client: Any, userdata: int, mid: int, rc: Any, props: Any) -> None:
        counts[userdata] += 1

    def worker(i: int) -> None:
        client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"paho-{i}", userdata=i)
        client.max_inflight_messages_set(20)
        client.max_queued_messages_set(1000)
        client.on_publish = on_publish
        client.connect("127.0.0.1", port)
        client.loop_start()
        while time.monotonic() < stop:
            info = client.publish(f"bench/{i}", payload, qos=qos)
            if info.rc == paho.MQTT_ERR_QUEUE_SIZE:
                time.sleep(0.0005)
        client.loop_stop()
        client.disconnect()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {"count": sum(counts), "elapsed": elapsed, "cpu": usage.ru_utime + usage.ru_stime}
        )
    )


def run_paho(port: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    qos = 0 if mode == "qos0" else 1
    done = subprocess.run(
        ["taskset", "-c", str(args.client_core), PYTHON, __file__, "--paho-publisher", str(port),
         "--clients", str(args.clients), "--qos", str(qos), "--size", str(args.size),
         "--duration", str(args.duration)],
        capture_output=True, text=True, check=True, timeout=args.duration + 60,
    )  # fmt: skip
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "rate": out["count"] / out["elapsed"],
        "counted": out["count"],
        "errors": 0,
        "cpu_us": out["cpu"] / max(1, out["count"]) * 1e6,
    }


def mqtt_benchmark_binary() -> str | None:
    found = shutil.which("mqtt-benchmark")
    home = Path.home() / "go" / "bin" / "mqtt-benchmark"
    return found or (str(home) if home.exists() else None)


def run_mqtt_benchmark(
    binary: str, port: int, mode: str, args: argparse.Namespace
) -> dict[str, Any]:
    """mqtt-benchmark's own figure: each client publishes one message at a time, no pause."""
    qos = 0 if mode == "qos0" else 1
    per_second = 7_000 if qos == 0 else 4_000  # its per-client rate here: runs last ~duration
    before = cpu_seconds()
    done = subprocess.run(
        ["taskset", "-c", str(args.client_core), binary, "-broker", f"tcp://127.0.0.1:{port}",
         "-clients", str(args.clients), "-count", str(int(per_second * args.duration)),
         "-size", str(args.size), "-qos", str(qos), "-message-interval", "0", "-quiet",
         "-format", "json"],
        capture_output=True, text=True, check=True, timeout=args.duration * 20 + 60,
    )  # fmt: skip
    totals = json.loads(done.stdout)["totals"]
    successes = int(totals["successes"])
    return {
        "rate": float(totals["total_msgs_per_sec"]),
        "counted": successes,
        "errors": int(totals["failures"]),
        "cpu_us": (cpu_seconds() - before) / max(1, successes) * 1e6,
    }


# --------------------------------------------------------------------------- subscriber cost


def read_syscalls() -> int:
    """The read-type system calls this process made so far (``syscr`` of ``/proc/self/io``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("syscr:"):
            return int(line.split()[1])
    return 0


SUB_VARIANTS = ("default", "rcvbuf", "nodelay-off", "lowat")
"""Subscriber socket settings tried for issue 22 §3 (``--sub-variant``): the default; a
4 MB SO_RCVBUF; TCP_NODELAY off; SO_RCVLOWAT of 4 messages (reads wait for them)."""


def tune_socket(session: StreamSession, variant: str) -> None:
    """Apply a ``--sub-variant`` to the subscriber's socket."""
    transport = getattr(session, "conn").transport  # noqa: B009
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or variant == "default":
        return
    if variant == "rcvbuf":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    elif variant == "nodelay-off":
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
    elif variant == "lowat":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 4 * 110)


def protobench_subscriber(port: int, duration: float, sessions: int, variant: str) -> None:
    """Child mode: ``sessions`` protobench subscribe sessions on uvloop; prints messages and CPU."""

    async def main() -> None:
        recorder = OpRecorder("sub")  # one recorder per operation, as in a worker
        tasks = []
        for index in range(sessions):
            ctx = SessionContext(
                f"mqtt://127.0.0.1:{port}", "sub", "subscribe", index, 0,
                SubscribeParams(topics=["bench/#"]), MqttOptions(), 10.0,
            )  # fmt: skip
            session = await MqttProtocol().open_session(ctx)
            assert isinstance(session, StreamSession)
            tune_socket(session, variant)
            tasks.append(asyncio.create_task(session.run(recorder)))
        print("ready", flush=True)
        counters = recorder.counters
        for _ in range(1200):  # the feeder's CLI start takes seconds: wait for its traffic
            if counters["received"]:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        count0, t0, reads0 = counters["received"], time.process_time(), read_syscalls()
        recorder.latencies.clear()
        await asyncio.sleep(duration)
        latencies = sorted(recorder.latencies)
        cpu = time.process_time() - t0
        count = counters["received"] - count0
        reads = read_syscalls() - reads0
        for task in tasks:
            task.cancel()
        p50 = latencies[len(latencies) // 2] / 1e3 if latencies else 0.0
        out = {"count": count, "cpu": cpu, "lost": counters["lost"], "reads": reads, "p50": p50}
        print(json.dumps(out), flush=True)

    uvloop.run(main())


def run_subscriber_cost(
    url: str,
    port: int,
    args: argparse.Namespace,
    directory: Path,
    sessions: int,
    variant: str = "default",
) -> dict[str, Any]:
    sub = subprocess.Popen(
        ["taskset", "-c", str(args.client_core), PYTHON, __file__, "--protobench-subscriber",
         str(port), "--duration", str(args.duration), "--sub-sessions", str(sessions),
         "--sub-variant", variant],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert sub.stdout is not None
    assert sub.stdout.readline().strip() == "ready"
    profile = directory / "bench-feed.toml"
    profile.write_text(
        'name = "bench-feed"\nprotocol = "mqtt"\n[[group]]\nop = "publish"\ncount = 4\n'
        f'size = {args.size}\ntopic = "bench/{{client}}"\n'
    )
    rate = ["--rate", f"{args.sub_rate}/s"] if args.sub_rate else []
    feeder = subprocess.Popen(
        ["taskset", "-c", str(args.broker_core), PYTHON, "-m", "protobench", "run", str(profile),
         "--target", url, "--processes", "1", *rate, "--duration", f"{args.duration + 60}s",
         "--warmup", "0s", "--json", "--quiet", "--snapshots-dir", str(directory / "snaps")],
        stdout=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    out = json.loads(sub.stdout.readline())
    sub.wait(30)
    feeder.send_signal(signal.SIGINT)
    feeder.wait(60)
    count = max(1, out["count"])
    return {
        "rate": out["count"] / args.duration,
        "counted": out["count"],
        "cpu_us": out["cpu"] / count * 1e6,
        "lost": out["lost"],
        "busy": out["cpu"] / args.duration * 100,
        "per_read": count / max(1, out["reads"]),
        "p50_us": out["p50"],
    }


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--qos", type=int, default=0)
    parser.add_argument("--sub-rate", type=int, default=0, help="feeder rate (0: back-to-back)")
    parser.add_argument(
        "--fanout", type=int, default=4, help="subscribers of the second sub row (1: no such row)"
    )
    parser.add_argument("--broker-core", type=int, default=0)
    parser.add_argument("--client-core", type=int, default=1)
    parser.add_argument("--paho-publisher", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--protobench-subscriber", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sub-sessions", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--sub-variant", choices=SUB_VARIANTS, default="default")
    parser.add_argument(
        "--sub-variants",
        action="store_true",
        help="only the subscriber row, once per --sub-variant, interleaved in each round",
    )
    args = parser.parse_args()
    if args.paho_publisher:
        paho_publisher(args.paho_publisher, args.clients, args.qos, args.size, args.duration)
        return
    if args.protobench_subscriber:
        protobench_subscriber(
            args.protobench_subscriber, args.duration, args.sub_sessions, args.sub_variant
        )
        return

    benchmark = mqtt_benchmark_binary()
    if benchmark is None:
        log(
            "mqtt-benchmark: not installed (build it from a clone of"
            " github.com/krylovsk/mqtt-benchmark: `go build -o ~/go/bin/mqtt-benchmark .`);"
            " its column is skipped"
        )
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="mqtt-bench-") as tmp:
        directory = Path(tmp)
        broker, port = start_mosquitto(directory, args.broker_core)
        url = f"mqtt://127.0.0.1:{port}"
        watcher = SysWatcher(port)
        broker_process = psutil.Process(broker.pid)
        try:
            for round_no in range(1, args.rounds + 1):
                if args.sub_variants:
                    for variant in SUB_VARIANTS:
                        result = run_subscriber_cost(url, port, args, directory, 1, variant)
                        log(
                            f"round {round_no} sub {variant:12} {result['rate']:>10,.0f} msg/s "
                            f"{result['cpu_us']:6.2f} µs CPU/msg, "
                            f"e2e p50 {result['p50_us']:.0f} µs "
                            f"({result['per_read']:.1f} messages per read, busy "
                            f"{result['busy']:.0f}%, load {os.getloadavg()[0]:.1f})"
                        )
                    continue
                for mode in ("qos0", "qos1"):
                    tools: dict[str, Callable[[], dict[str, Any]]] = {
                        "protobench": partial(run_protobench, url, mode, args, directory),
                        "paho-mqtt": partial(run_paho, port, mode, args),
                    }
                    if benchmark:
                        tools["mqtt-benchmark"] = partial(
                            run_mqtt_benchmark, benchmark, port, mode, args
                        )
                    for name, run in tools.items():
                        start = watcher.fresh()
                        busy, wall = broker_cpu(broker_process), time.monotonic()
                        result = run()
                        result["broker_cpu"] = (
                            (broker_cpu(broker_process) - busy) / (time.monotonic() - wall) * 100
                        )
                        result["broker_received"] = watcher.fresh() - start
                        results.setdefault(mode, {}).setdefault(name, []).append(result)
                        log(
                            f"round {round_no} {mode:5} {name:15} {result['rate']:>10,.0f} msg/s "
                            f"{result['cpu_us']:6.2f} µs CPU/msg  counted {result['counted']:,} "
                            f"broker received {result['broker_received']:,} "
                            f"broker CPU {result['broker_cpu']:.0f}%"
                        )
                subs = [("sub", 1)] + (
                    [(f"sub x{args.fanout}", args.fanout)] if args.fanout > 1 else []
                )
                for mode, sessions in subs:
                    result = run_subscriber_cost(url, port, args, directory, sessions)
                    results.setdefault(mode, {}).setdefault("protobench", []).append(result)
                    log(
                        f"round {round_no} {mode:5} protobench      {result['rate']:>10,.0f} msg/s "
                        f"{result['cpu_us']:6.2f} µs CPU/msg (lost {result['lost']}, subscriber "
                        f"busy {result['busy']:.0f}%, {result['per_read']:.1f} messages per read, "
                        f"e2e p50 {result['p50_us']:.0f} µs)"
                    )
        finally:
            watcher.stop()
            broker.terminate()
            broker.wait(10)
    if not args.sub_variants:
        print_table(results, args)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def print_table(
    results: dict[str, dict[str, list[dict[str, Any]]]], args: argparse.Namespace
) -> None:
    print(
        f"\n{args.clients} clients, {args.size} B, {args.duration:g} s x {args.rounds} rounds; "
        f"mosquitto on core {args.broker_core}, generator on core {args.client_core}"
    )
    header = (
        "mode", "generator", "msg/s (median)", "µs CPU/msg", "broker CPU", "vs paho",
        "vs mqtt-benchmark",
    )  # fmt: skip
    row = "{:6} {:15} {:>15} {:>11} {:>11} {:>8} {:>18}"
    print(row.format(*header))
    for mode, by_tool in results.items():
        medians = {
            name: statistics.median(r["rate"] for r in runs) for name, runs in by_tool.items()
        }
        for name, runs in by_tool.items():
            cpu = statistics.median(r["cpu_us"] for r in runs)
            broker = "-"
            if "broker_cpu" in runs[0]:
                broker = f"{statistics.median(r['broker_cpu'] for r in runs):.0f}%"
            paho_ratio = "-"
            if "paho-mqtt" in medians:
                paho_ratio = f"{medians[name] / medians['paho-mqtt']:.2f}x"
            peer = "n/a"
            if "mqtt-benchmark" in medians:
                peer = f"{medians[name] / medians['mqtt-benchmark']:.2f}x"
            print(
                row.format(
                    mode, name, f"{medians[name]:,.0f}", f"{cpu:.2f}", broker, paho_ratio, peer
                )
            )


if __name__ == "__main__":
    main()
