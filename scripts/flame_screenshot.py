"""Make the README's screenshot of the report's flame graph: docs/flame-bacnet.png.

Runs ``protobench run bacnet-ip --profile-target`` (bac-py's server as the
embedded target, 10 s of sustain) on loopback with a private snapshot store,
writes the report with ``protobench report``, opens it in headless Chromium
(Debian's ``chromium``, see ``scripts/setup``) and saves its ``target
profile`` section (flame graph and top functions) as a PNG.

    .venv/bin/python scripts/flame_screenshot.py [--out docs/flame-bacnet.png]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.browser import browser, find_chromium  # noqa: E402

RUN = ["run", "bacnet-ip", "--profile-target", "-d", "10s", "--warmup", "2s", "--no-tui", "-q"]
TOP_OF = "document.getElementById('target-profile').getBoundingClientRect().top + window.scrollY"


def main() -> None:
    parser = argparse.ArgumentParser(description="Screenshot of the report's flame graph.")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "flame-bacnet.png")
    parser.add_argument("--height", type=int, default=1100)
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        sys.exit("chromium is not installed (scripts/setup installs it)")
    with tempfile.TemporaryDirectory(prefix="pb-flame-") as tmp:
        store = Path(tmp) / "snapshots"
        page = Path(tmp) / "report.html"
        protobench = [sys.executable, "-m", "protobench"]
        subprocess.run(
            [*protobench, *RUN, "--snapshots-dir", str(store)], cwd=tmp, check=True, timeout=180
        )
        subprocess.run(
            [*protobench, "report", "latest", "-o", str(page), "--snapshots-dir", str(store)],
            check=True,
            timeout=120,
        )
        with browser(chromium, width=1280, height=args.height) as b:
            loaded = b.load(page, 150)
            if loaded.errors:
                sys.exit(f"the page logged errors: {loaded.errors}")
            top = float(b.evaluate(TOP_OF))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_bytes(b.screenshot(args.height, top=top))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
