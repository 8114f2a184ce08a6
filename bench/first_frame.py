"""How soon a headless run's first figures come: seconds from launch to each NDJSON event.

``protobench run PROFILE --ndjson --quiet`` is launched ``--rounds`` times (in a
temporary directory, its own snapshot store); the script timestamps each line
as it arrives and prints, per round and as the median of the rounds, the time
from launch to ``started`` (workers up and sessions open), to the first
``phase`` and to the first ``interval`` with data (some ``ok``). The monitor
draws its first frame with data from the same interval (``bench/tui_overhead``
times that one under a pseudo-terminal). The goal is <= 1.5 s against the
embedded HTTP target on a quiet machine; the load average is printed beside
each round, as the machine may be shared.

Run it as ``bench/first_frame [--profile http-get] [--processes 4] [--rounds 5]``;
for a before/after, ``PYTHONPATH=OTHER-CHECKOUT/src bench/first_frame`` runs that code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MARKS = ("started", "phase", "data")


def one_round(args: argparse.Namespace, workdir: str) -> dict[str, float]:
    """Seconds from launch to each mark of one run."""
    command = [sys.executable, "-m", "protobench", "run", args.profile, "--ndjson", "--quiet"]
    command += ["--processes", str(args.processes), "--duration", "1s"]
    launched = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=workdir)
    assert child.stdout is not None
    marks: dict[str, float] = {}
    for line in child.stdout:
        event = json.loads(line)
        kind = event["type"]
        if kind == "interval" and event["total"].get("ok", 0) > 0:
            kind = "data"
        marks.setdefault(kind, time.monotonic() - launched)
    if child.wait() != 0:
        raise SystemExit(f"the run failed (exit {child.returncode}): {' '.join(command)}")
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="http-get")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="protobench-first-frame-") as workdir:
        for index in range(args.rounds):
            marks = one_round(args, workdir)
            rounds.append(marks)
            cells = ", ".join(f"{mark} {marks.get(mark, float('nan')):.2f}s" for mark in MARKS)
            print(f"round {index + 1}: {cells}, load {os.getloadavg()[0]:.1f}")
    print(f"\n{args.profile}, {args.processes} workers, median of {args.rounds} rounds:")
    for mark in MARKS:
        values = [marks[mark] for marks in rounds if mark in marks]
        if values:
            print(f"  launch to {mark:<8} {statistics.median(values):.2f}s")
    goal = "PASS" if statistics.median(m.get("data", 1e9) for m in rounds) <= 1.5 else "FAIL"
    print(f"first interval with data: goal <= 1.5s on a quiet machine: {goal}")
    print(f"load average (1 min): {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
