"""Make the README's screenshot of the report's flame graph: docs/flame-bacnet.png.

Runs ``protobench run bacnet-ip --profile-target`` (bac-py's server as the
embedded target, 10 s of sustain) on loopback with a private snapshot store,
writes the report, opens it in headless Chromium (Debian's ``chromium``, see
``scripts/setup``) and saves its ``target profile`` section (flame graph and
top functions) as a PNG (:func:`report_screenshot.shoot`).

    .venv/bin/python scripts/flame_screenshot.py [--out docs/flame-bacnet.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from report_screenshot import shoot  # noqa: E402

RUN = ["run", "bacnet-ip", "--profile-target", "-d", "10s", "--warmup", "2s", "--no-tui", "-q"]


def main() -> None:
    parser = argparse.ArgumentParser(description="Screenshot of the report's flame graph.")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "flame-bacnet.png")
    parser.add_argument("--height", type=int, default=1100)
    args = parser.parse_args()
    shoot(RUN, args.out, args.height, section="target-profile")


if __name__ == "__main__":
    main()
