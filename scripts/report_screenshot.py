"""Make the docs' screenshots of the HTML report: the first screen of one run per protocol.

For each built-in protocol, runs a short ``protobench run`` of one of its built-in
profiles against its embedded target on loopback with a private snapshot store, writes
the report with ``protobench report``, opens it in headless Chromium (Debian's
``chromium``, see ``scripts/setup``) and saves the page's first screen (1280x900) as
``docs/report-PROTOCOL.png``.

    .venv/bin/python scripts/report_screenshot.py [--protocol http ...] [--out-dir docs]
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

SHORT = ["--warmup", "2s", "--duration", "10s", "--no-tui", "--quiet"]
RUNS = {
    # the open model, ramped: the offered rate beside the achieved one
    "http": ["run", "http-get", "--rate", "2000/s", "--ramp-to", "6000/s", "-p", "1", *SHORT],
    "websocket": ["run", "ws-echo", *SHORT],
    "mqtt": ["run", "mqtt-fanout", *SHORT],
    "bacnet-ip": ["run", "bacnet-ip", *SHORT],
    "bacnet-sc": ["run", "bacnet-sc", *SHORT],
    "haystack": ["run", "haystack-http", *SHORT],
    "beckn": ["run", "beckn-bap", *SHORT],
}
"""A built-in profile of each protocol, run for 12 s."""


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
        ran = subprocess.run(
            [*protobench, *run, "--snapshots-dir", str(store)], cwd=tmp, check=False, timeout=180
        )
        if ran.returncode not in (0, 1):  # a failed threshold is a report worth showing
            sys.exit(f"{' '.join(run)}: exit code {ran.returncode}")
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
    parser = argparse.ArgumentParser(description="Screenshots of the HTML report for the docs.")
    parser.add_argument("--protocol", action="append", choices=sorted(RUNS), default=None)
    parser.add_argument("--out-dir", type=Path, default=REPO / "docs")
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    for protocol in args.protocol or list(RUNS):
        shoot(RUNS[protocol], args.out_dir / f"report-{protocol}.png", args.height)


if __name__ == "__main__":
    main()
