"""How soon the monitor shows something: seconds from launch to its first frames.

Three commands are launched in turn, once per round (paired: a change in the
machine's load between rounds falls on all three alike), each with its own
snapshot store in a temporary directory:

- ``replay``: ``protobench replay`` of a short saved run, in a pseudo-terminal
  (``--size``, default 120x40): launch to the **first frame** (the header names
  the replayed run: ``REPLAY ×``) and to the first frame with data (a latency
  figure such as ``208µs`` is drawn);
- ``run``: ``protobench run PROFILE`` in a pseudo-terminal, the monitor open:
  launch to its first frame (the header drawn) and to the **first frame with
  data**;
- ``headless``: ``protobench run PROFILE --ndjson --quiet``: launch to the
  first interval with data (the engine alone, no screen).

Goals on a quiet machine: the replay's first frame <= 0.5 s, the run's first
frame with data <= 1.0 s. The medians of the rounds are printed with the load
average, and each round's figures as it ends.

Run it as ``bench/first_frame [--profile http-get] [--processes 4] [--rounds 5]``;
for a before/after, ``PYTHONPATH=OTHER-CHECKOUT/src bench/first_frame`` runs that code.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

REPLAY_GOAL = 0.5
RUN_GOAL = 1.0
HEADER = re.compile(rb"protobench ")
"""The header's first word: drawn in the first frame."""
REPLAYED = re.compile("REPLAY ×".encode())
"""The header of a replay names it once the replayed run is on screen."""
DATA = re.compile("[0-9](?:µs|ms)".encode())
"""A latency figure: drawn only once an interval has come (``208µs``, ``1.32ms``)."""
ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_])")
"""Control sequences (CSI, OSC, two-byte): taken out before matching, as ``\x1b[...7m``
followed by ``s`` would read as ``7ms``."""
LIMIT = 60.0


def pty_round(
    command: list[str], marks: dict[str, re.Pattern[bytes]], args: argparse.Namespace, workdir: Path
) -> dict[str, float]:
    """Seconds from launch until each of ``marks`` first appears in the terminal's output."""
    columns, rows = (int(v) for v in args.size.split("x"))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
    launched = time.monotonic()
    child = subprocess.Popen(
        command,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=workdir,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen: dict[str, float] = {}
    tail = b""
    try:
        while not marks.keys() <= seen.keys() and time.monotonic() - launched < LIMIT:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            now = time.monotonic() - launched
            tail = tail[-512:] + chunk
            text = ESCAPES.sub(b"", tail)
            for name, pattern in marks.items():
                if name not in seen and pattern.search(text):
                    seen[name] = now
                    if name == "frame":
                        seen["cpu"] = cpu_seconds(child.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)
        drain_until_exit(master, child)
        os.close(master)
    return seen


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process ``pid`` has used so far, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drain_until_exit(master: int, child: subprocess.Popen[bytes]) -> None:
    """Read the terminal until the child is gone (a full pty would block its exit)."""
    deadline = time.monotonic() + LIMIT
    os.set_blocking(master, False)
    while child.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            os.read(master, 65536)
        time.sleep(0.02)
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def headless_round(args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    """Seconds from launch to the first NDJSON interval with data."""
    command = [*run_command(args), "--ndjson", "--quiet"]
    launched = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=workdir)
    assert child.stdout is not None
    seen: dict[str, float] = {}
    for line in child.stdout:
        event = json.loads(line)
        if event["type"] == "interval" and event["total"].get("ok", 0) > 0:
            seen.setdefault("data", time.monotonic() - launched)
    if child.wait() != 0:
        raise SystemExit(f"the run failed (exit {child.returncode}): {' '.join(command)}")
    return seen


def run_command(args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        "-m",
        "protobench",
        "run",
        args.profile,
        "--processes",
        str(args.processes),
        "--duration",
        "2s",
        "--warmup",
        "1s",
    ]


def save_a_run(args: argparse.Namespace, workdir: Path) -> None:
    """The snapshot the replays play: a short headless run of the same profile."""
    subprocess.run(
        [*run_command(args), "--json", "--quiet"], cwd=workdir, check=True, capture_output=True
    )


def compiled() -> bool:
    """Whether imports read compiled bytecode (else each launch compiles the sources)."""
    spec = importlib.util.find_spec("textual.app")
    assert spec is not None
    assert spec.origin is not None
    cached = Path(importlib.util.cache_from_source(spec.origin))
    return cached.exists() or not os.environ.get("PYTHONDONTWRITEBYTECODE")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="http-get")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", default="120x40", help="terminal COLUMNSxROWS")
    args = parser.parse_args()
    replay = [sys.executable, "-m", "protobench", "replay", "latest"]
    kinds = {
        "replay": lambda w: pty_round(replay, {"frame": REPLAYED, "data": DATA}, args, w),
        "run": lambda w: pty_round(run_command(args), {"frame": HEADER, "data": DATA}, args, w),
        "headless": lambda w: headless_round(args, w),
    }
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    loads = []
    with tempfile.TemporaryDirectory(prefix="protobench-first-frame-") as tmp:
        workdir = Path(tmp)
        save_a_run(args, workdir)
        for index in range(args.rounds):
            cells = []
            for kind, measure in kinds.items():
                marks = measure(workdir)
                results[kind].append(marks)
                cells.append(kind + " " + " ".join(f"{m} {v:.2f}s" for m, v in marks.items()))
            loads.append(os.getloadavg()[0])
            print(f"round {index + 1}: {'; '.join(cells)}; load {loads[-1]:.1f}", flush=True)
    print(
        f"\n{args.profile}, {args.processes} workers, {args.size} terminal, "
        f"median of {args.rounds} rounds (load average {min(loads):.1f}-{max(loads):.1f} "
        f"on {os.cpu_count()} cores):"
    )

    def median(kind: str, mark: str) -> float:
        values = [marks[mark] for marks in results[kind] if mark in marks]
        return statistics.median(values) if values else float("inf")

    replay_frame, run_data = median("replay", "frame"), median("run", "data")
    for kind, goal, verdict in (
        ("replay", f"first frame <= {REPLAY_GOAL}s", replay_frame <= REPLAY_GOAL),
        ("run", f"first frame with data <= {RUN_GOAL}s", run_data <= RUN_GOAL),
    ):
        print(
            f"  {kind + ':':8} launch to the first frame {median(kind, 'frame'):.2f}s "
            f"(CPU {median(kind, 'cpu'):.2f}s), to data {median(kind, 'data'):.2f}s  "
            f"[goal: {goal}: {'PASS' if verdict else 'FAIL'}]"
        )
    print(f"  headless: launch to the first interval with data {median('headless', 'data'):.2f}s")
    if not compiled():
        print(
            "warning: the bytecode of textual is not compiled and PYTHONDONTWRITEBYTECODE is "
            "set: every launch compiles its imports (run scripts/setup)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
