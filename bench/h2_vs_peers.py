"""protobench's HTTP/2 client against h2load and oha ``--http2``, on one core each.

nginx (one worker process, pinned to ``--server-core``, ``listen ... http2``) serves
the 13-byte ``Hello, World!`` of :mod:`http_vs_peers` in cleartext HTTP/2 (h2c with
prior knowledge). Each generator runs pinned to ``--client-core`` with the same
``--connections`` × ``--streams`` (streams in flight per connection) for
``--duration`` seconds, ``--rounds`` times, the generators interleaved; a ratio to
h2load is the median of the per-round ratios. For each run: requests per second, the
generator's CPU per request (user + system) and nginx's CPU use.

Generators:

* ``protobench``: ``protobench run URL --h2c --streams S --connections C
  --processes 1`` (one worker, every latency recorded); req/s is
  the report's sustain throughput, CPU over the sustain intervals (controller +
  worker), as :func:`http_vs_peers.run_protobench` measures it.
* ``h2load`` (Debian's nghttp2-client; ``-t 1 -c C -m S -D D``): the reference,
  in C on nghttp2.
* ``oha --http2`` (``-c C -p S``), when ``oha`` is on PATH (``cargo install oha``).

``--clock kernel user`` runs protobench once per clock (``protobench/kernel``,
``protobench/user``). Run it as ``bench/h2_vs_peers [--connections 50] [--streams 10]
[--rounds 3]``;
``--connections 1 --streams 100`` is the issue's second shape. h2load is installed
from Debian when missing (``PROTOBENCH_BENCH_TOOLS=1 scripts/setup`` does too).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from http_vs_peers import (
    Result,
    Settings,
    common_arguments,
    print_table,
    run_protobench,
    run_rounds,
    settings_from,
    start_nginx,
    summarize,
    timed_peer,
)


def find_h2load() -> str:
    found = shutil.which("h2load")
    if found:
        return found
    print("h2load not found: installing nghttp2-client from Debian", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "nghttp2-client"],
        check=True,
        env=env,
    )
    return shutil.which("h2load") or "/usr/bin/h2load"


def run_h2load(settings: Settings, binary: str) -> Result:
    streams, c, d = settings.extra["streams"], settings.connections, settings.duration
    command = [binary, "-t", "1", "-c", str(c), "-m", str(streams), "-D", f"{d:g}"]
    out, cpu = timed_peer(settings, [*command, settings.url])
    finished = re.search(r"finished in ([\d.]+)(m?s)", out)
    done = re.search(
        r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", out
    )
    if not finished or not done:
        raise RuntimeError(f"h2load output not understood:\n{out}")
    seconds = float(finished.group(1)) * (1e-3 if finished.group(2) == "ms" else 1.0)
    return Result("h2load", int(done.group(1)), seconds, cpu, int(done.group(2)))


def run_oha_h2(settings: Settings) -> Result:
    streams, c, d = settings.extra["streams"], settings.connections, settings.duration
    command = ["oha", "--http2", "-z", f"{d:g}s", "-c", str(c), "-p", str(streams)]
    command += ["--no-tui", "--output-format", "json", settings.url]
    out, cpu = timed_peer(settings, command)
    data = json.loads(out[out.index("{") :])
    codes = data.get("statusCodeDistribution", {})
    requests = sum(int(v) for k, v in codes.items() if k.startswith("2"))
    errors = sum(int(v) for k, v in codes.items() if not k.startswith("2"))
    errors += sum(
        int(v)
        for k, v in data.get("errorDistribution", {}).items()
        if k != "aborted due to deadline"
    )
    return Result("oha", requests, float(data["summary"]["total"]), cpu, errors)


def run_protobench_h2(settings: Settings, clock: str = "") -> Result:
    """The one-line run ``protobench run URL --h2c --streams S``, as :func:`run_protobench`
    (with ``--clock CLOCK`` when given)."""
    extra = ["--h2c", "--streams", str(settings.extra["streams"])]
    return run_protobench(settings, profile=settings.url, clock=clock, extra=extra)


def main() -> int:
    parser = common_arguments(__doc__, connections=50)
    parser.add_argument("--streams", type=int, default=10, help="streams per connection (10)")
    parser.add_argument("--only", nargs="*", help="run only these generators")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--clock",
        nargs="+",
        choices=["kernel", "user"],
        help="run protobench once per --clock (default: its default, the kernel's)",
    )
    args = parser.parse_args()
    chosen: dict[str, Any] = {
        "/".join(["protobench", *([clock] if clock else [])]): partial(
            run_protobench_h2, clock=clock
        )
        for clock in args.clock or [""]
    }
    chosen |= {
        "h2load": partial(run_h2load, binary=find_h2load()),
    }
    if shutil.which("oha"):
        chosen["oha"] = run_oha_h2
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k.split("/")[0] in args.only}
    with tempfile.TemporaryDirectory(prefix="protobench-bench-") as tmp:
        settings = settings_from(args, Path(tmp))
        settings.extra["streams"] = args.streams
        nginx = start_nginx(settings, listen="http2")
        try:
            print(
                f"target {settings.url} (h2c) | generators: {', '.join(chosen)} | "
                f"{args.rounds} rounds x {args.duration:g}s, {args.connections} connections x "
                f"{args.streams} streams, server core {args.server_core}, client core "
                f"{args.client_core}, load average "
                f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}",
                file=sys.stderr,
            )
            results = run_rounds(settings, chosen, args.rounds, nginx=True)
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    rows = summarize(results, references=("h2load",))
    print_table(rows, args.rounds, references=("h2load",))
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "runs": [asdict(r) for r in results]}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
