"""Make the docs' screenshot of the HTML report: docs/report.png.

Runs ``protobench run http-get`` (open model, ramped, 20 s) against its
embedded target on loopback with a private snapshot store, writes the report
with ``protobench report``, opens it in headless Chromium (Debian's
``chromium``, see ``scripts/setup``) and saves the top of the page as a PNG.

    .venv/bin/python scripts/report_screenshot.py [--out docs/report.png]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.browser import browser, find_chromium  # noqa: E402

RUN = [
    "run",
    "http-get",
    "--rate",
    "2000/s",
    "--ramp-to",
    "6000/s",
    "--warmup",
    "3s",
    "--duration",
    "20s",
    "--processes",
    "1",
    "--no-tui",
    "--quiet",
]


def main() -> None:
    parser = argparse.ArgumentParser(description="Screenshot of the HTML report for the docs.")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        sys.exit("chromium is not installed (scripts/setup installs it)")
    with tempfile.TemporaryDirectory(prefix="pb-shot-") as tmp:
        store = Path(tmp) / "snapshots"
        page = Path(tmp) / "report.html"
        protobench = [sys.executable, "-m", "protobench"]
        subprocess.run(
            [*protobench, *RUN, "--snapshots-dir", str(store)], cwd=tmp, check=True, timeout=120
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
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_bytes(b.screenshot(args.height))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
