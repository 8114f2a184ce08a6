"""Reported latency against the wire's: protobench (kernel and user clock) beside wrk and wrk2.

nginx (one worker process, pinned to ``--server-core``) serves a 13-byte body on
127.0.0.1; each generator runs pinned to ``--client-core`` while ``tcpdump``
captures loopback (:mod:`protobench.wiretruth`). Requests and replies are paired
per connection, and the wire's latency of each exchange (its request's first
packet to its reply's last) goes through the same HdrHistogram as protobench's
(3 significant digits), over the same exchanges: protobench runs without warmup,
and its latencies are its snapshot's sustain and drain histograms merged (the
capture's exchanges); wrk's are its whole run's, wrk2's those of its last ``--duration`` seconds
(after its calibration). Then each generator's reported p50/p90/p99 is
printed beside the wire's, with reported − wire.

Cases (``--cases``): ``c1`` one connection and ``c10`` ten, closed model
(protobench ``--clock kernel``, ``--clock user``, wrk), and ``open`` (``--rate``,
10 connections: protobench's latency from the actual send, ``latency_uncorrected_us``,
which is what the wire sees, and wrk2's uncorrected latency, ``-U``); beside HTTP,
``bacnet`` (BACnet/IP ReadProperty on 2 lanes against bac-py's device, ``protobench
serve bacnet-ip`` pinned to the server core: requests and replies paired by client
and invoke ID on UDP) and ``ws`` (WebSocket echoes on 2 connections against
``protobench serve ws``, paired per connection), protobench on both clocks. Goal:
the kernel clock within 2 µs + 5% of the wire at p50 and p99.

Rounds (``--rounds``) run every case's generators interleaved; the table shows the
medians of the rounds (each difference is the median of the per-round
differences), and the load average. The machine may be shared: read the spread.
Needs tcpdump (``scripts/setup`` installs it) and the right to capture (root or
CAP_NET_RAW); wrk from Debian; wrk2 built from a clone (see bench/README.md, or
``WRK2=/path/to/wrk``).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from http_vs_peers import (
    PROTOBENCH,
    Settings,
    common_arguments,
    find_wrk2,
    settings_from,
    start_nginx,
    wrk_duration_us,
)
from protobench.engine.metrics import fold, merge, new_histogram, summary
from protobench.wiretruth import pairing, pcap
from protobench.wiretruth.capture import capture, unavailable

PERCENTILES = ("p50", "p90", "p99")
GOAL_US, GOAL_SHARE = 2.0, 0.05
"""Within 2 µs + 5% of the wire."""


@dataclass
class Measure:
    """One generator's run of one case: its figures and the wire's over the same window."""

    case: str
    generator: str
    round_index: int
    wire: dict[str, float]
    reported: dict[str, float]
    exchanges: int
    dropped: int = 0
    delay_p50: float = float("nan")
    note: str = ""

    def difference(self, name: str) -> float:
        return self.reported.get(name, float("nan")) - self.wire.get(name, float("nan"))


@dataclass
class Case:
    name: str
    connections: int
    rate: float = 0.0
    generators: list[str] = field(default_factory=list)
    protocol: str = "http"
    """The pairer's (:data:`protobench.wiretruth.pairing.PAIRERS`)."""
    serve: str = ""
    """The embedded target protobench serves for the case (empty: nginx)."""
    url: str = ""
    """The target's URL, once it runs."""


PROFILES = {
    "http": "http-get",
    "websocket": "ws-echo",
    "bacnet-ip": (
        'name = "rp"\nprotocol = "bacnet-ip"\ntarget = "embedded"\n[[group]]\n'
        'op = "read-property"\ncount = {connections}\nobjects = ["analog-input:*"]\n'
        'property = "present-value"\n'
    ),
}
"""Each protocol's workload: a built-in profile, or a profile file's text."""


def port_of(url: str) -> int:
    return urlsplit(url).port or 0


@contextmanager
def serving(settings: Settings, name: str) -> Iterator[str]:
    """``protobench serve NAME`` pinned to the server core, for the block: its URL."""
    command = ["taskset", "-c", str(settings.server_core), str(PROTOBENCH), "serve", name]
    process = subprocess.Popen(
        [*command, "--port", "0", "--announce"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"protobench serve {name} did not start ({process.wait(10)})")
        yield str(json.loads(line)["url"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wire_figures(
    path: Path, port: int, start_ns: int, end_ns: int, protocol: str = "http"
) -> tuple[dict[str, float], int]:
    """The wire's p50/p90/p99 (µs, HdrHistogram like protobench's) of ``protocol``'s
    exchanges sent in ``[start_ns, end_ns)``, and how many there were."""
    latencies = array("q")
    for exchange in pairing.PAIRERS[protocol](pcap.read(path), port):
        if start_ns <= exchange.sent_ns < end_ns:
            latencies.append(exchange.latency_ns)
    hist = new_histogram()
    fold(hist, latencies)
    figures = summary(hist)
    return {name: figures.get(name, float("nan")) for name in PERCENTILES}, len(latencies)


def run_protobench(settings: Settings, case: Case, clock: str) -> dict[str, Any]:
    """protobench's report of ``case``, without warmup: its exchanges are the capture's
    (all but the few still in flight when sustain ends, which its drain counts)."""
    profile = PROFILES[case.protocol]
    if "\n" in profile:
        path = settings.workdir / f"{case.protocol}.toml"
        path.write_text(profile.format(connections=case.connections))
        profile = str(path)
    command = ["taskset", "-c", str(settings.client_core), str(PROTOBENCH), "run", profile]
    command += ["--target", case.url or settings.url, "--processes", "1", "--clock", clock]
    if case.protocol != "bacnet-ip":  # its lanes are the profile's
        command += ["--connections", str(case.connections)]
    if case.rate:
        command += ["--rate", f"{case.rate:g}/s"]
    command += ["--duration", f"{settings.duration:g}s", "--warmup", "0s"]
    command += ["--json", "--no-tui", "--quiet"]
    command += ["--snapshots-dir", str(settings.workdir / "snapshots")]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=settings.workdir,
        timeout=settings.duration * 3 + 60,
        check=False,
        start_new_session=True,
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(
            f"protobench run failed ({done.returncode}):\n{done.stderr[-3000:]}"
        ) from None
    return report


def timed_latency(report: dict[str, Any], key: str) -> dict[str, float]:
    """p50/p90/p99 (µs) of every exchange the run timed, sustain and drain (its snapshot's
    histograms merged): without warmup, the capture's exchanges."""
    with gzip.open(report["snapshot"], "rb") as raw:
        histograms = json.loads(raw.read())["histograms"]
    encoded = [hists.get(key, "") for phase in histograms.values() for hists in phase.values()]
    figures = summary(merge(encoded))
    return {name: figures.get(name, float("nan")) for name in PERCENTILES}


def protobench_measure(settings: Settings, case: Case, clock: str, round_index: int) -> Measure:
    port = port_of(case.url or settings.url)
    transport = "udp" if case.protocol == "bacnet-ip" else "tcp"
    with capture(port, settings.workdir, transport=transport) as wire:
        report = run_protobench(settings, case, clock)
    total = report["phases"]["sustain"]["total"]
    latency = timed_latency(report, "hist_uncorrected" if case.rate else "hist")
    figures, count = wire_figures(wire.path, port, 0, 2**63 - 1, case.protocol)
    delay = (total.get("generator_delay_us") or {}).get("p50", float("nan"))
    name = "protobench" if clock == "kernel" else "protobench --clock user"
    clocks = report.get("clock") or {}
    note = "" if clock == "user" else f"receive {clocks.get('receive')}, send {clocks.get('send')}"
    return Measure(
        case.name,
        name,
        round_index,
        figures,
        latency,
        count,
        wire.dropped,
        delay_p50=float(delay),
        note=note,
    )


def peer_measure(settings: Settings, case: Case, name: str, round_index: int) -> Measure:
    """wrk (closed model) or wrk2 (``-U``: its uncorrected latency, from the actual send)."""
    port = port_of(settings.url)
    seconds = settings.duration
    if name == "wrk2":
        binary = find_wrk2()
        if binary is None:
            raise RuntimeError("wrk2 is not built (see bench/README.md, or WRK2=/path/to/wrk)")
        command = [binary, "-U", f"-R{case.rate:g}"]
        seconds += 11.0  # its calibration, before it records
    else:
        command = ["wrk"]
    command += ["-t1", f"-c{case.connections}", f"-d{seconds:g}s", "--latency", settings.url]
    with capture(port, settings.workdir) as wire:
        started = time.time_ns()
        done = subprocess.run(
            ["taskset", "-c", str(settings.client_core), *command],
            capture_output=True,
            text=True,
            timeout=seconds * 3 + 60,
            check=False,
            start_new_session=True,
        )
        ended = time.time_ns()
    out = done.stdout
    if name == "wrk2":
        out = out.split("Uncorrected Latency", 1)[-1]
        started = ended - int(settings.duration * 1e9)
    reported = {}
    for percentile, label in (("p50", "50"), ("p90", "90"), ("p99", "99")):
        found = re.search(rf"^\s*{label}(?:\.000)?%\s+(\S+)", out, re.MULTILINE)
        reported[percentile] = wrk_duration_us(found.group(1)) if found else float("nan")
    figures, count = wire_figures(wire.path, port, started, ended)
    return Measure(case.name, name, round_index, figures, reported, count, wire.dropped)


def within_goal(measure_rows: list[Measure]) -> str:
    """Whether the medians of the per-round differences meet the goal at p50 and p99."""
    verdicts = []
    for name in ("p50", "p99"):
        wire = statistics.median(m.wire[name] for m in measure_rows)
        difference = statistics.median(m.difference(name) for m in measure_rows)
        verdicts.append(abs(difference) <= GOAL_US + GOAL_SHARE * wire)
    return "met" if all(verdicts) else "not met"


def print_table(measures: list[Measure], rounds: int) -> None:
    """One row per case and generator: medians of the wire's, the reported and the difference."""
    print(
        "\n| case | generator | wire p50 / p90 / p99 µs | reported p50 / p90 / p99 µs"
        " | reported − wire p50 / p90 / p99 µs | within 2 µs + 5% | generator delay p50 µs"
        " | exchanges |"
    )
    print("|---|---|---:|---:|---:|---|---:|---:|")
    keys = list(dict.fromkeys((m.case, m.generator) for m in measures))
    for case, generator in keys:
        rows = [m for m in measures if (m.case, m.generator) == (case, generator)]

        def med(values: list[float]) -> str:
            clean = [v for v in values if not math.isnan(v)]
            return f"{statistics.median(clean):,.0f}" if clean else "-"

        def signed(values: list[float]) -> str:
            clean = [v for v in values if not math.isnan(v)]
            return f"{statistics.median(clean):+,.0f}" if clean else "-"

        wire = " / ".join(med([m.wire[p] for m in rows]) for p in PERCENTILES)
        reported = " / ".join(med([m.reported[p] for m in rows]) for p in PERCENTILES)
        diff = " / ".join(signed([m.difference(p) for m in rows]) for p in PERCENTILES)
        goal = within_goal(rows) if generator == "protobench" else ""
        delay = med([m.delay_p50 for m in rows])
        count = med([float(m.exchanges) for m in rows])
        print(
            f"| {case} | {generator} | {wire} | {reported} | {diff} | {goal} | {delay} | {count} |"
        )
    dropped = sum(m.dropped for m in measures)
    print(
        f"\n({rounds} round(s), medians; the wire's latency is a request's first packet to its"
        " reply's last (BACnet/IP: datagrams paired by invoke ID), through the same HdrHistogram"
        " as protobench's; open model: latencies"
        f" from the actual send; {dropped} packets dropped by the capture)"
    )
    notes = sorted({f"{m.generator}: {m.note}" for m in measures if m.note})
    for note in notes:
        print(f"note: {note}")


CASES = {
    "c1": Case("1 connection", 1, 0.0, ["protobench", "protobench --clock user", "wrk"]),
    "c10": Case("10 connections", 10, 0.0, ["protobench", "protobench --clock user", "wrk"]),
    "open": Case("open", 10, 2000.0, ["protobench", "protobench --clock user", "wrk2"]),
    "bacnet": Case(
        "BACnet/IP ReadProperty, 2 lanes",
        2,
        generators=["protobench", "protobench --clock user"],
        protocol="bacnet-ip",
        serve="bacnet-ip",
    ),
    "ws": Case(
        "WebSocket echo, 2 connections",
        2,
        generators=["protobench", "protobench --clock user"],
        protocol="websocket",
        serve="ws",
    ),
}


def main() -> int:
    parser = common_arguments(__doc__, connections=10)
    parser.add_argument(
        "--cases", nargs="+", choices=sorted(CASES), default=["c1", "c10", "open", "bacnet", "ws"]
    )
    parser.add_argument("--rate", type=float, default=2000.0, help="open model's rate (2000)")
    parser.add_argument("--only", nargs="*", help="run only these generators (protobench, wrk...)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="protobench-wire-") as tmp:
        workdir = Path(tmp)
        reason = unavailable(workdir)
        if reason is not None:
            print(f"wire_truth: cannot capture loopback: {reason}", file=sys.stderr)
            return 2
        settings = settings_from(args, workdir)
        nginx = start_nginx(settings)
        stack = ExitStack()
        cases = [CASES[name] for name in args.cases]
        for case in cases:
            if case.serve:
                case.url = stack.enter_context(serving(settings, case.serve))
        CASES["open"].rate = args.rate
        CASES["open"].name = f"open {args.rate:,.0f}/s, 10 connections"
        measures: list[Measure] = []
        print(
            f"target {settings.url} | {args.rounds} rounds x {args.duration:g}s | server core"
            f" {args.server_core}, client core {args.client_core} | load average"
            f" {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
            file=sys.stderr,
        )
        try:
            for round_index in range(args.rounds):
                for case in cases:
                    for generator in case.generators:
                        if args.only and generator.split()[0] not in args.only:
                            continue
                        try:
                            measure = _measure(settings, case, generator, round_index)
                        except Exception as exc:  # one failed run is reported, the rest go on
                            print(f"round {round_index + 1} {case.name} {generator}: FAILED: {exc}",
                                  file=sys.stderr)  # fmt: skip
                            continue
                        measures.append(measure)
                        print(
                            f"round {round_index + 1} {case.name:<32} {generator:<24}"
                            f" wire {_triple(measure.wire)}  reported {_triple(measure.reported)}"
                            f"  ({measure.exchanges:,} exchanges, {measure.dropped} dropped)",
                            file=sys.stderr,
                        )
        finally:
            stack.close()
            nginx.terminate()
            nginx.wait(timeout=10)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print_table(measures, args.rounds)
    return 0


def _measure(settings: Settings, case: Case, generator: str, round_index: int) -> Measure:
    settings.connections = case.connections
    if generator == "protobench":
        return protobench_measure(settings, case, "kernel", round_index)
    if generator == "protobench --clock user":
        return protobench_measure(settings, case, "user", round_index)
    return peer_measure(settings, case, generator, round_index)


def _triple(figures: dict[str, float]) -> str:
    return "/".join(f"{figures.get(p, float('nan')):.0f}" for p in PERCENTILES)


if __name__ == "__main__":
    sys.exit(main())
