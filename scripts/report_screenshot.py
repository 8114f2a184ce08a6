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


def shoot(run: list[str], out: Path, height: int, section: str | None = None) -> None:
    """Run ``protobench RUN`` in a private store, write its report, save a PNG of the page
    from the top, or from the element whose id is ``section``, ``height`` pixels high."""
    chromium = find_chromium()
    if chromium is None:
        sys.exit("chromium is not installed (scripts/setup installs it)")
    with tempfile.TemporaryDirectory(prefix="pb-shot-") as tmp:
        store = Path(tmp) / "snapshots"
        page = Path(tmp) / "report.html"
        protobench = [sys.executable, "-m", "protobench"]
        subprocess.run(
            [*protobench, *run, "--snapshots-dir", str(store)], cwd=tmp, check=True, timeout=180
        )
        subprocess.run(
            [*protobench, "report", "latest", "-o", str(page), "--snapshots-dir", str(store)],
            check=True,
            timeout=120,
        )
        with browser(chromium, width=1280, height=height) as b:
            loaded = b.load(page, 150)
            if loaded.errors:
                sys.exit(f"the page logged errors: {loaded.errors}")
            top = 0.0
            if section is not None:
                where = f"document.getElementById('{section}').getBoundingClientRect().top"
                top = float(b.evaluate(f"{where} + window.scrollY"))
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(b.screenshot(height, top=top))
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Screenshot of the HTML report for the docs.")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    shoot(RUN, args.out, args.height)


if __name__ == "__main__":
    main()
