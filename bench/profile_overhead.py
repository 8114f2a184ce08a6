"""What sampling costs the server: its throughput with and without the target's profiler.

For each target (``protobench serve http``, bac-py's BACnet/IP server as
``protobench serve bacnet-ip``, mosquitto), pinned to core 0, one long
closed-model run (``--ndjson``, its generator on core 1) loads it while this
script alternates windows of ``--window`` seconds without and with the tool
``run --profile-target`` would use on it (py-spy for the Python servers, perf
for mosquitto), started exactly as the recorder starts it (same commands, py-spy
restarted every 2 s, at ``--rate`` samples per second). The same target
process and the same generator see both conditions, so the run-to-run spread of
a shared machine does not land on one side; each window's throughput comes from
the run's own intervals inside it. It prints each window, then per target the
cost of each profiled window against the mean of the windows on either side
(``1 - on / off``) and their median, with the load average.

    bench/profile_overhead [--pairs 6] [--window 4] [--rate 100]
                           [--only http bacnet-ip mosquitto]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from protobench.engine.stacks import perf, pyspy

TARGETS = ("http", "bacnet-ip", "mosquitto")
LOAD = {
    "http": ("http-get", "-c", "32"),
    "bacnet-ip": ("bacnet-ip",),
    "mosquitto": ("mqtt-throughput", "-c", "8"),
}
"""The load of each target: a profile and its sessions, closed model, back to back."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def pin(core: int) -> list[str]:
    """``taskset -c CORE`` when the host has two cores or more (and taskset)."""
    if (os.cpu_count() or 1) < 2 or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(core)]


@contextlib.contextmanager
def target(name: str, workdir: Path) -> Iterator[tuple[str, int]]:
    """The target on a free loopback port, pinned to core 0: its URL and pid."""
    port = free_port()
    if name == "mosquitto":
        conf = workdir / "mosquitto.conf"
        lines = ["persistence false", f"listener {port} 127.0.0.1", "allow_anonymous true"]
        conf.write_text("\n".join([*lines, "user root"] if os.geteuid() == 0 else lines) + "\n")
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        server = subprocess.Popen([*pin(0), binary, "-c", str(conf)], stderr=subprocess.DEVNULL)
        url = f"mqtt://127.0.0.1:{port}"
        time.sleep(0.5)
    else:
        command = [*pin(0), sys.executable, "-m", "protobench", "serve", name, "--announce"]
        server = subprocess.Popen(
            [*command, "--port", str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert server.stdout is not None
        url = str(json.loads(server.stdout.readline())["url"])
    try:
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(10)


class Load:
    """The generator's run (``--ndjson``): each interval's end (monotonic) and completions."""

    def __init__(self, name: str, url: str, seconds: float, workdir: Path) -> None:
        profile, *sessions = LOAD[name]
        command = [*pin(1), sys.executable, "-m", "protobench", "run", profile, "-t", url]
        command += [*sessions, "-d", f"{seconds}s", "--warmup", "2s", "-p", "1", "--ndjson"]
        command += ["--quiet", "--snapshots-dir", str(workdir / "snaps")]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=workdir)
        self.intervals: list[tuple[float, float, int]] = []
        self.started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            if event["type"] == "started":
                self.started.set()
            elif event["type"] == "interval" and event["phase"] == "sustain":
                now = time.monotonic()
                ok = int(event["total"].get("ok", 0))
                self.intervals.append((now - float(event["duration"]), now, ok))

    def rate(self, start: float, end: float) -> float:
        """Completions per second of the intervals that lie within [start, end]."""
        inside = [(b, e, n) for b, e, n in self.intervals if b >= start - 0.05 and e <= end + 0.05]
        seconds = sum(e - b for b, e, _ in inside)
        return sum(n for _, _, n in inside) / seconds if seconds else float("nan")


def sample(tool: str, pid: int, rate: float, seconds: float, workdir: Path) -> None:
    """Run the tool on ``pid`` for ``seconds`` as the recorder does."""
    until = time.monotonic() + seconds
    if tool == "perf":
        executable = perf.binary()
        assert executable is not None
        args = perf.record_command(executable, pid, rate, workdir / "perf.data")
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(max(0.0, until - time.monotonic()))
        process.send_signal(signal.SIGINT)
        process.wait(30)
        for data in workdir.glob("perf.data*"):
            data.unlink()
        return
    executable = pyspy.binary()
    assert executable is not None
    while (left := until - time.monotonic()) > 0.2:
        out = workdir / "py-spy.txt"
        args = pyspy.command(executable, pid, rate, out, native=False)
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(min(2.0, left))
        process.send_signal(signal.SIGINT)
        process.wait(30)


def measure(name: str, args: argparse.Namespace, workdir: Path) -> list[float]:
    tool = "perf" if name == "mosquitto" else "py-spy"
    seconds = 3 + (2 * args.pairs + 1) * args.window + 2
    with target(name, workdir) as (url, pid):
        load = Load(name, url, seconds, workdir)
        load.started.wait(60)
        time.sleep(3)  # warmup and the first sustain interval
        windows: list[tuple[bool, float, float]] = []
        for index in range(2 * args.pairs + 1):
            on = index % 2 == 1
            start = time.monotonic()
            if on:
                sample(tool, pid, args.rate, args.window, workdir)
            else:
                time.sleep(args.window)
            windows.append((on, start, time.monotonic()))
        load.process.wait(120)
    rates = [(on, load.rate(start + 1.0, end)) for on, start, end in windows]
    for on, value in rates:
        state = f"{tool} on" if on else "off"
        print(f"{name:9} {state:10} {value:12,.1f}/s  load {os.getloadavg()[0]:.1f}", flush=True)
    costs = []
    for index in range(1, len(rates) - 1, 2):
        off = (rates[index - 1][1] + rates[index + 1][1]) / 2
        costs.append(1 - rates[index][1] / off)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--window", type=float, default=4.0)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--only", nargs="*", choices=TARGETS, default=list(TARGETS))
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="protobench-profile-overhead-") as tmp:
        for name in args.only:
            results[name] = measure(name, args, Path(tmp))
    print()
    print(f"| target | tool | windows | cost at {args.rate:g} Hz (median) | per window |")
    print("|---|---|---:|---:|---|")
    for name, costs in results.items():
        tool = "perf" if name == "mosquitto" else "py-spy"
        each = ", ".join(f"{c:+.1%}" for c in costs)
        print(f"| {name} | {tool} | {len(costs)} | {statistics.median(costs):+.1%} | {each} |")


if __name__ == "__main__":
    main()
