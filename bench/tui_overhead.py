"""CPU of the monitor's process during a 4-worker run, at the default refresh.

``protobench run PROFILE --processes 4`` is started under a pseudo-terminal
(so it opens the monitor, at ``--size`` columns × rows), with its own
snapshot store in a temporary directory. Once the four worker processes are
up and the warmup is over, the script samples the CPU time (user + system)
of the monitor's process, which holds the Textual UI (its main thread) and
the engine's controller (its own thread: aggregation, resource sampling),
over ``--window`` seconds of the sustain phase, and reports it as a
percentage of one core, the UI thread's share separately. The same plan is
then run headless (``--json``) and its controller process measured the same
way: the difference is what the monitor itself costs. The goal is <= 5% of
one core for the whole monitor process.

It also times the first frame with data: from launching the command to
the monitor drawing its first interval (the counters panel's title names the
measured phase, ``whole warmup``, only once an interval arrived; before, it
says ``whole phase``). The goal
is <= 1.5 s against the embedded HTTP target on a quiet machine; the load
average is printed beside both figures.

Run it as ``bench/tui_overhead [--profile http-get] [--duration 20]
[--rounds 2]``. The machine may be shared: the figure is the median of the
rounds, the spread is printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

GOAL = 5.0
FIRST_FRAME_GOAL = 1.5
DATA_DRAWN = (b"whole warmup", b"whole sustain")
"""Drawn with the first interval only: the counters panel's title names its phase."""
FORKSERVER = "protobench.engine.forkserver"
"""The workers are the fork server's children (and carry its command line)."""


@dataclass
class Sample:
    """CPU of one measured process over the window, in % of one core."""

    process: float
    main_thread: float
    seconds: float
    first_frame: float | None = None
    """Seconds from launch to the first frame with data (monitored runs)."""


def cpu_times(process: psutil.Process) -> tuple[float, float]:
    """(whole process, main thread) CPU seconds so far."""
    times = process.cpu_times()
    main = next(
        (t.user_time + t.system_time for t in process.threads() if t.id == process.pid), 0.0
    )
    return times.user + times.system, main


def wait_for_workers(process: psutil.Process, count: int, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            children = process.children(recursive=True)
        except psutil.Error:
            break
        workers = [
            c for c in children if FORKSERVER in " ".join(_cmdline(c)) and _ppid(c) != process.pid
        ]
        if len(workers) >= count:
            return
        time.sleep(0.1)
    raise SystemExit(f"the {count} worker processes did not start within {limit:.0f}s")


def _ppid(process: psutil.Process) -> int | None:
    try:
        return process.ppid()
    except psutil.Error:
        return None


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def measure(process: psutil.Process, start_after: float, window: float) -> Sample:
    time.sleep(start_after)
    cpu0, main0 = cpu_times(process)
    t0 = time.monotonic()
    time.sleep(window)
    cpu1, main1 = cpu_times(process)
    seconds = time.monotonic() - t0
    return Sample(
        process=100 * (cpu1 - cpu0) / seconds,
        main_thread=100 * (main1 - main0) / seconds,
        seconds=seconds,
    )


def run_args(args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        "-m",
        "protobench",
        "run",
        args.profile,
        "--processes",
        str(args.processes),
        "--duration",
        f"{args.duration}s",
        "--warmup",
        f"{args.warmup}s",
    ]


def monitored_round(args: argparse.Namespace, workdir: Path) -> Sample:
    """One run under a pseudo-terminal, the monitor open; its process measured."""
    columns, rows = (int(v) for v in args.size.split("x"))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    launched = time.monotonic()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
    child = subprocess.Popen(
        run_args(args),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=workdir,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    screen = bytearray()
    drawn: list[float] = []

    def drain() -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(master, 65536):
                screen.extend(chunk[-4096:])
                if not drawn and any(mark in screen for mark in DATA_DRAWN):
                    drawn.append(time.monotonic() - launched)
                del screen[:-16384]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process = psutil.Process(child.pid)
        wait_for_workers(process, args.processes)
        sample = measure(process, args.warmup + 1.5, args.window)
        deadline = time.monotonic() + args.duration + 60
        while b".protobench/snapshots/" not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
        os.write(master, b"q")
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        with contextlib.suppress(OSError):
            os.close(master)
    if child.returncode not in (0, 1):
        raise SystemExit(f"the monitored run ended with exit code {child.returncode}")
    sample.first_frame = drawn[0] if drawn else None
    return sample


def headless_round(args: argparse.Namespace, workdir: Path) -> Sample:
    """The same run headless (``--json``); its controller process measured."""
    child = subprocess.Popen(
        [*run_args(args), "--json", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workdir,
        start_new_session=True,
    )
    try:
        process = psutil.Process(child.pid)
        wait_for_workers(process, args.processes)
        sample = measure(process, args.warmup + 1.5, args.window)
        out, _ = child.communicate(timeout=args.duration + 60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    json.loads(out)
    return sample


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="http-get")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--duration", type=float, default=20.0, help="sustain seconds")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--window", type=float, default=0.0, help="default: duration - 4 s")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--size", default="120x40", help="terminal COLUMNSxROWS")
    args = parser.parse_args()
    args.window = args.window or max(2.0, args.duration - 4.0)
    monitored: list[Sample] = []
    headless: list[Sample] = []
    workdir = Path(tempfile.mkdtemp(prefix="protobench-tui-overhead-"))
    try:
        for number in range(args.rounds):
            monitored.append(monitored_round(args, workdir))
            headless.append(headless_round(args, workdir))
            m, h = monitored[-1], headless[-1]
            frame = f"{m.first_frame:.2f}s" if m.first_frame is not None else "never"
            print(
                f"round {number + 1}: monitor process {m.process:5.1f}% "
                f"(UI thread {m.main_thread:4.1f}%), headless controller {h.process:5.1f}%, "
                f"first frame with data {frame}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    total = statistics.median(s.process for s in monitored)
    ui = statistics.median(s.main_thread for s in monitored)
    base = statistics.median(s.process for s in headless)
    spread = max(s.process for s in monitored) - min(s.process for s in monitored)
    verdict = "PASS" if total <= GOAL else "FAIL"
    print(
        f"\n{args.profile}, {args.processes} workers, {args.size} terminal, "
        f"{args.window:.0f}s of sustain, {args.rounds} rounds (median; spread {spread:.1f} points)"
    )
    goal = f"[goal <= {GOAL:.0f}%: {verdict}]"
    print(f"monitor process (UI + engine thread): {total:.1f}% of one core  {goal}")
    print(f"  of which the UI thread:            {ui:.1f}%")
    print(f"headless controller process:         {base:.1f}%")
    print(f"the monitor's own cost:              {total - base:+.1f} points")
    frames = [s.first_frame for s in monitored if s.first_frame is not None]
    first = statistics.median(frames) if frames else float("inf")
    verdict = "PASS" if first <= FIRST_FRAME_GOAL else "FAIL"
    print(
        f"first frame with data:               {first:.2f}s after launch  "
        f"[goal <= {FIRST_FRAME_GOAL}s on a quiet machine: {verdict}]"
    )
    print(
        f"load average (1 min) at the end:     {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    return 0 if total <= GOAL and first <= FIRST_FRAME_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
