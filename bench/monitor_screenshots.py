"""Screenshots of the monitor's overview for the docs, from real runs' snapshots.

For each profile, ``protobench run PROFILE`` runs headless into a temporary
store; the snapshot is then replayed in the monitor (Textual's Pilot, no
terminal) to its end, the overview shown as it was in the run's last
seconds, and saved as SVG; ``chromium --headless`` turns each SVG into
``docs/monitor-PROFILE.png``.

Run it as ``bench/monitor_screenshots [--profiles http-get mqtt-fanout bacnet-ip]
[--size 160x48] [--duration 8s]``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.source import ReplaySource

DOCS = Path(__file__).resolve().parent.parent / "docs"


def run(profile: str, store: Path, duration: str) -> None:
    command = [sys.executable, "-m", "protobench", "run", profile, "--duration", duration]
    command += ["--warmup", "2s", "--processes", "2", "--json", "--quiet"]
    subprocess.run([*command, "--snapshots-dir", str(store)], check=True, capture_output=True)


async def screenshot(snapshot: Snapshot, size: tuple[int, int], svg: Path) -> None:
    """Replay ``snapshot`` to its last interval and save the overview as SVG."""
    app = MonitorApp(ReplaySource(snapshot, speed=1000.0), refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=size) as pilot:
        while not app.finished:
            await pilot.pause(0.05)
        await pilot.press("1")
        await pilot.pause(0.3)
        app.save_screenshot(str(svg))


def to_png(svg: Path, png: Path) -> None:
    box = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text())
    assert box is not None, f"{svg}: no viewBox"
    width, height = (round(float(v)) for v in box.groups())
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is needed to turn the SVG into PNG")
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            svg.as_uri(),
        ],
        check=True,
        capture_output=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", nargs="+", default=["http-get", "mqtt-fanout", "bacnet-ip"])
    parser.add_argument(
        "--sizes", nargs="+", default=["160x48", "80x24"], help="terminals, COLUMNSxROWS"
    )
    parser.add_argument("--duration", default="8s")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="protobench-screenshots-"))
    try:
        for profile in args.profiles:
            store = SnapshotStore(work / profile)
            run(profile, store.directory, args.duration)
            for number, size in enumerate(args.sizes):
                columns, rows = (int(v) for v in size.split("x"))
                name = f"monitor-{profile}" + (f"-{size}" if number else "")
                svg = work / f"{name}.svg"
                asyncio.run(screenshot(store.load("latest"), (columns, rows), svg))
                to_png(svg, DOCS / f"{name}.png")
                print(f"docs/{name}.png", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
