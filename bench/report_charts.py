"""The HTML report's build time on a 10-minute run, against reading the same snapshot.

Goal: ``protobench report`` of a 10-minute run in under 2 s on a quiet machine. Each
round runs, one after the other, ``protobench report REF -o FILE`` and its peer
``protobench snapshots show REF`` (the same snapshot read and summarised: the floor of
any command that reads it); each command's wall time and CPU time (its process's
rusage) are kept, and the script prints their medians, the report's ratio to the peer
per round (median), the page's size, where the report's time goes in one process
(loading the snapshot, the view, the page) and how long headless Chromium takes to load
the page and draw every chart (Debian's ``chromium``; skipped without it).

Without SNAPSHOT it makes a 10-minute one in a temporary store: 600 intervals of 1 s,
``--ops`` operations (default 6, as many as the bacnet-ip built-in), the open model
(corrected and uncorrected histograms), errors with codes and counters, through the
engine's own aggregator (that takes a minute). With SNAPSHOT (a path, or a reference
in the default store) it measures that run.

    .venv/bin/python bench/report_charts.py [SNAPSHOT] [--rounds 5] [--ops 6]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.browser import browser, find_chromium
from tests.support.snapshots import OpSpec, make_snapshot

from protobench.htmlreport.page import run_page
from protobench.htmlreport.view import run_view
from protobench.snapshots.store import SnapshotStore, read

MINUTES = 10
GOAL_S = 2.0


def _ten_minutes(store: SnapshotStore, ops: int) -> str:
    """A 10-minute open-model snapshot of ``ops`` operations, written to ``store``."""
    specs = {
        f"op-{n}": OpSpec(rate=40.0 / (n + 1), median_us=500.0 * (n + 1), error_rate=0.01 * n)
        for n in range(ops)
    }
    snapshot = make_snapshot(specs, intervals=MINUTES * 60, interval=1.0, open_model=True)
    for record in snapshot["series"]:
        for number, figures in enumerate(record["ops"].values()):
            figures["counters"] = {"behind": number, "reconnects": number % 2}
            if figures["errors"]:
                figures["error_codes"] = {"timeout:slow": figures["errors"]}
    store.write(snapshot["id"], snapshot)
    return str(store.directory / f"{snapshot['id']}.json.gz")


def _timed(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one command run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _median(values: list[float]) -> str:
    spread = ", ".join(f"{v:.2f}" for v in values)
    return f"{statistics.median(values):5.2f} s ({spread})"


def measure(path: str, rounds: int, against: Path | None = None) -> None:
    protobench = [sys.executable, "-m", "protobench"]
    with tempfile.TemporaryDirectory(prefix="pb-bench-report-") as tmp:
        page = Path(tmp) / "report.html"
        report: dict[str, list[float]] = {"wall": [], "cpu": []}
        peer: dict[str, list[float]] = {"wall": [], "cpu": []}
        other: dict[str, list[float]] = {"wall": [], "cpu": []}
        ratios = []
        for number in range(rounds):
            if against is not None and number % 2:
                _against(against, path, Path(tmp), other)
            wall, cpu = _timed([*protobench, "report", path, "-o", str(page)])
            report["wall"].append(wall)
            report["cpu"].append(cpu)
            if against is not None and not number % 2:
                _against(against, path, Path(tmp), other)
            peer_wall, peer_cpu = _timed([*protobench, "snapshots", "show", path])
            peer["wall"].append(peer_wall)
            peer["cpu"].append(peer_cpu)
            ratios.append(wall / peer_wall)
        size = page.stat().st_size / 1024
        print(f"protobench report     wall {_median(report['wall'])}  cpu {_median(report['cpu'])}")
        print(f"snapshots show (peer) wall {_median(peer['wall'])}  cpu {_median(peer['cpu'])}")
        goal = "PASS" if statistics.median(report["wall"]) <= GOAL_S else "FAIL"
        print(
            f"report / peer (wall, per round) {statistics.median(ratios):.2f}x; "
            f"page {size:,.0f} KiB; goal <= {GOAL_S:g} s wall: {goal}"
        )
        if against is not None:
            per_round = [
                mine / theirs for mine, theirs in zip(report["cpu"], other["cpu"], strict=True)
            ]
            print(f"{against} report wall {_median(other['wall'])}  cpu {_median(other['cpu'])}")
            print(f"this report / {against}'s (cpu, per round) {statistics.median(per_round):.2f}x")
        _breakdown(path, rounds)
        _draw(page, rounds)


def _against(checkout: Path, path: str, tmp: Path, times: dict[str, list[float]]) -> None:
    """One round of ``checkout``'s own ``protobench report`` of the same snapshot."""
    python = str(checkout / ".venv" / "bin" / "python")
    wall, cpu = _timed([python, "-m", "protobench", "report", path, "-o", str(tmp / "peer.html")])
    times["wall"].append(wall)
    times["cpu"].append(cpu)


def _breakdown(path: str, rounds: int) -> None:
    """Where one process's time goes: reading the snapshot, the view, the page."""
    parts: dict[str, list[float]] = {"load": [], "view": [], "page": []}
    for _ in range(rounds):
        started = time.perf_counter()
        snapshot = read(Path(path))
        loaded = time.perf_counter()
        view = run_view(snapshot)
        viewed = time.perf_counter()
        run_page(view)
        parts["load"].append(loaded - started)
        parts["view"].append(viewed - loaded)
        parts["page"].append(time.perf_counter() - viewed)
    print("in one process: " + "  ".join(f"{k} {_median(v)}" for k, v in parts.items()))


def _draw(page: Path, rounds: int) -> None:
    chromium = find_chromium()
    if chromium is None:
        print("chromium is not installed: no load and draw time (scripts/setup installs it)")
        return
    times = []
    for _ in range(rounds):
        with browser(chromium) as b:
            loaded = b.load(page, 150, timeout=60.0)
            if loaded.errors:
                print(f"the page logged errors: {loaded.errors}")
            times.append(loaded.drawn_seconds)
    print(f"chromium load + draw every chart {_median(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("snapshot", nargs="?", help="a snapshot (default: make a 10-minute one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", type=int, default=6, help="operations of the made snapshot")
    parser.add_argument(
        "--against", type=Path, help="a checkout (with its .venv) whose report is timed too"
    )
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory(prefix="pb-bench-store-") as tmp:
        if args.snapshot:
            path = args.snapshot
            if not Path(path).exists():
                store = SnapshotStore()
                path = str(store.directory / f"{store.load(path).id}.json.gz")
        else:
            started = time.perf_counter()
            path = _ten_minutes(SnapshotStore(Path(tmp)), args.ops)
            print(
                f"made a {MINUTES}-minute snapshot of {args.ops} ops in "
                f"{time.perf_counter() - started:.0f} s"
            )
        snapshot = read(Path(path))
        print(
            f"snapshot {snapshot.id}: {len(snapshot.series)} intervals, "
            f"{len(snapshot.operations)} operations"
        )
        measure(path, args.rounds, args.against)


if __name__ == "__main__":
    main()
