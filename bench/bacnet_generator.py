"""How fast is protobench's BACnet/IP hot path, and how much lighter than bac-py's Client?

Three measurements, each client pinned to ``--client-core`` and each server to
``--server-core``:

1. **Against a fast responder.** A small UDP responder (Go when ``go`` is on
   PATH, else Python on uvloop) answers ReadProperty of AI-1..AI-10 (and the
   device's object-list, which a session reads when it opens) with replies
   pre-encoded by bac-py. protobench's read-property sessions run in the
   engine's own closed-model driver (``ClosedDriver`` + ``OpRecorder``, the
   worker's code: submit from the completion callback, one latency appended
   per reply, folded into an HdrHistogram every second) for ``--duration``
   seconds after ``--warmup``. Every reply is checked as in a run (invoke
   ID, PDU type, service, object, property, value decoded). Reported:
   requests per second, the client's CPU µs per request, and requests per
   client CPU-second ("per core"), with the default invoke-ID reuse window
   (10 s, so the client opens rate × 10 / 256 sockets) and without it; and
   bac-py's ``Client.read`` from as many tasks, for its cost per request
   when it is busy (the responder does no duplicate detection, so bac-py's
   reused invoke IDs get the right replies here).
2. **Against bac-py's stress server** (``protobench serve bacnet-ip``, the
   real 40-object bac-py server): the same protobench sessions, then bac-py's
   ``Client.read`` from as many concurrent tasks, on uvloop, reading AI-1..10
   in turn. Reported: requests per second, client CPU µs per request, the
   ratio, and how many of bac-py's reads returned another object's value
   (the server replays its cached reply when an invoke ID comes back within
   6 s; protobench never reuses one that soon). Both clients keep the same
   number of requests in flight against the same server, but they do not wait
   the same way: protobench waits for the server, so its event loop goes to
   sleep and is woken up again for most replies, and that sleep and wake-up
   (a voluntary context switch, costly in a virtual machine) is part of its
   CPU per request; bac-py's Client needs about a core for the same rate, so
   it is the bottleneck (the server has idle time), rarely sleeps, and pays
   almost no wake-ups. ``sleeps/req`` (voluntary context switches per
   request) and ``server CPU`` show this.
3. **Both paced at the same rate against bac-py's stress server** (``--paced-rate``,
   8,000 req/s by default; 0 skips it): the fair comparison of (2), since both
   clients then do the same work at the same rate, each below its own capacity and
   the server's, instead of one running flat out and the other waiting on the
   server; what each pays to wait (sleeps and wake-ups, timers) is then its own
   cost at that load, as in a real paced run. The same sessions/tasks as (2):
   protobench's sessions in the engine's open-model driver (``ArrivalDriver``, what
   ``protobench run --rate`` runs), which sleeps on a timerfd until each arrival's
   intended time (microsecond precision) and issues it then, so it wakes up about
   once per arrival plus once per reply that finds it asleep; then bac-py's
   ``Client.read`` from tasks that each sleep with ``asyncio.sleep`` (the event
   loop's millisecond timers) until their next due time (arrival ``n`` at
   ``n / rate``, on task ``n % tasks``) and read AI-1..10 in turn. Reported as in
   (2), plus the achieved rate (a client that falls more than 1 % short is named
   below the table) and ``late``: the share of arrivals that found no free
   session / their task still reading (they go out as soon as one frees, so the
   rate holds). Latencies are from the due time (coordinated omission corrected),
   so a server stall shows in the p99 of the paced rows only. Pacing does not
   equalise wake-ups: at 8,000/s bac-py's Client is still busy most of the time
   and rarely sleeps, while protobench, idle between arrivals and replies, wakes
   up for most of them; that is the price of being lighter at a given rate, and
   part of the ratio.

Every figure covers the measured window only: the client's CPU, its sleeps
and the server's CPU are all read by the client process when its window
starts and ends (warm-up and start-up excluded).

Every process (responder, server, each client) starts in its own session: with
Linux's scheduler autogroups a process in the script's session would share
one weight with it while a shared machine's other jobs compete for the core.

Run it as ``bench/bacnet_generator [--duration 10] [--rounds 3] [--paced-rate 8000]``
(seven client runs a round). The machine may be shared: compare the rounds and the
servers' CPU before reading the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
import uvloop
from bac_py import Client
from bac_py.encoding.apdu import ComplexAckPDU, encode_apdu
from bac_py.encoding.primitives import encode_application_object_id, encode_application_real
from bac_py.network.npdu import NPDU, encode_npdu
from bac_py.services.read_property import ReadPropertyACK
from bac_py.transport.bvll import encode_bvll
from bac_py.types.enums import BvlcFunction, ObjectType, PropertyIdentifier
from bac_py.types.primitives import ObjectIdentifier

from protobench.engine.metrics import OpRecorder, new_histogram
from protobench.engine.schedule import ArrivalDriver, ClosedDriver, RunState, Slot
from protobench.protocols.bacnet_ip.address import parse_target
from protobench.protocols.bacnet_ip.codec import DeviceProbe, ReadRequest
from protobench.protocols.bacnet_ip.options import BacnetIpOptions, ReadPropertyParams
from protobench.protocols.bacnet_ip.plugin import BacnetIpProtocol
from protobench.protocols.bacnet_ip.sessions import LeanSession
from protobench.protocols.base import SessionContext
from protobench.protocols.timestamps.clock import probe
from protobench.protocols.timestamps.reactor import Reactor

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
DEVICE = 1
AI = [ObjectIdentifier(ObjectType.ANALOG_INPUT, i) for i in range(1, 11)]
PV = PropertyIdentifier.PRESENT_VALUE
READ_PROPERTY = 12

GO_RESPONDER = """package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
)

// Answers BACnet/IP confirmed requests from a table: request bytes after the invoke ID
// (offset 8 of an unrouted request) -> reply bytes before and after the invoke ID.
func main() {
	runtime.GOMAXPROCS(1)
	table := map[string][2][]byte{}
	file, err := os.Open(os.Args[2])
	if err != nil {
		panic(err)
	}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		parts := strings.Fields(scanner.Text())
		key, _ := hex.DecodeString(parts[0])
		head, _ := hex.DecodeString(parts[1])
		tail, _ := hex.DecodeString(parts[2])
		table[string(key)] = [2][]byte{head, tail}
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(os.Args[1])))
	if err != nil {
		panic(err)
	}
	fmt.Println(conn.LocalAddr().(*net.UDPAddr).Port)
	buf := make([]byte, 2048)
	out := make([]byte, 0, 2048)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if n < 10 {
			continue
		}
		reply, ok := table[string(buf[9:n])]
		if !ok {
			continue
		}
		out = append(append(append(out[:0], reply[0]...), buf[8]), reply[1]...)
		conn.WriteToUDPAddrPort(out, from)
	}
}
"""


@dataclass
class Result:
    """One client's measured window."""

    client: str
    server: str
    requests: int
    errors: int
    seconds: float
    cpu_seconds: float
    p50_us: float = 0.0
    p99_us: float = 0.0
    sockets: int = 1
    wrong_values: int = 0
    server_cpu: float = 0.0
    sleeps: int = 0
    rate: float = 0.0
    late: int = 0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_us(self) -> float:
        return self.cpu_seconds / self.requests * 1e6 if self.requests else float("nan")

    @property
    def per_core(self) -> float:
        return self.requests / self.cpu_seconds if self.cpu_seconds else 0.0

    @property
    def sleeps_per_request(self) -> float:
        return self.sleeps / self.requests if self.requests else float("nan")


class Window:
    """The measured window of a client process: its wall time, its CPU, how often it
    slept (voluntary context switches), and the server's CPU over the same time."""

    def __init__(self, server_pid: int) -> None:
        self.server = psutil.Process(server_pid)
        self.t0 = self.cpu0 = self.server0 = 0.0
        self.sleeps0 = 0

    def start(self) -> None:
        usage, self.server0 = resource.getrusage(resource.RUSAGE_SELF), self.server_cpu()
        self.cpu0, self.sleeps0 = usage.ru_utime + usage.ru_stime, usage.ru_nvcsw
        self.t0 = time.perf_counter()

    def stop(self) -> dict[str, Any]:
        t1 = time.perf_counter()
        usage, server1 = resource.getrusage(resource.RUSAGE_SELF), self.server_cpu()
        return {
            "seconds": t1 - self.t0,
            "cpu_seconds": usage.ru_utime + usage.ru_stime - self.cpu0,
            "sleeps": usage.ru_nvcsw - self.sleeps0,
            "server_cpu": server1 - self.server0,
        }

    def server_cpu(self) -> float:
        times = self.server.cpu_times()
        return times.user + times.system


# -- the fast responder -------------------------------------------------------------


def reply_parts(ack: bytes) -> tuple[bytes, bytes]:
    """A ComplexACK datagram for ReadProperty, split around its invoke ID."""
    apdu = encode_apdu(ComplexAckPDU(False, False, 0, None, None, READ_PROPERTY, ack))
    wire = encode_bvll(BvlcFunction.ORIGINAL_UNICAST_NPDU, encode_npdu(NPDU(apdu=apdu)))
    at = len(wire) - len(apdu) + 1
    return wire[:at], wire[at + 1 :]


def responder_table() -> list[tuple[bytes, bytes, bytes]]:
    """(request after invoke ID, reply head, reply tail) for AI-1..10 and the object-list."""
    rows = []
    for oid in AI:
        value = encode_application_real(60.0 + 1.5 * oid.instance_number)
        head, tail = reply_parts(ReadPropertyACK(oid, PV, None, value).encode())
        rows.append((ReadRequest(oid, PV, None).tail, head, tail))
    device = ObjectIdentifier(ObjectType.DEVICE, DEVICE)
    objects = b"".join(
        encode_application_object_id(o.object_type, o.instance_number) for o in [device, *AI]
    )
    head, tail = reply_parts(
        ReadPropertyACK(device, PropertyIdentifier.OBJECT_LIST, None, objects).encode()
    )
    rows.append((DeviceProbe(DEVICE, None).tail, head, tail))
    return rows


class PythonResponder(asyncio.DatagramProtocol):
    """The fallback responder: the same table on uvloop."""

    def __init__(self, table: dict[bytes, tuple[bytes, bytes]]) -> None:
        self.table = table
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        reply = self.table.get(data[9:])
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply[0] + data[8:9] + reply[1], addr)


async def python_responder() -> None:
    table = {key: (head, tail) for key, head, tail in responder_table()}
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        lambda: PythonResponder(table), local_addr=("127.0.0.1", 0)
    )
    print(transport.get_extra_info("sockname")[1], flush=True)
    await asyncio.Event().wait()


def start_responder(workdir: Path, core: int) -> tuple[subprocess.Popen[str], int, str]:
    """Start the fast responder pinned to ``core``; return it, its port and its kind."""
    table = workdir / "table.txt"
    table.write_text("".join(f"{k.hex()} {h.hex()} {t.hex()}\n" for k, h, t in responder_table()))
    go = shutil.which("go")
    if go:
        source = workdir / "responder.go"
        source.write_text(GO_RESPONDER)
        binary = workdir / "responder"
        env = {**os.environ, "GOFLAGS": "-buildvcs=false", "GO111MODULE": "off"}
        subprocess.run(
            [go, "build", "-o", str(binary), str(source)], check=True, env=env, cwd=workdir
        )
        command, kind = [str(binary), "127.0.0.1:0", str(table)], "Go"
    else:
        command, kind = [str(PYTHON), __file__, "--role", "responder"], "Python/uvloop"
    process = subprocess.Popen(
        ["taskset", "-c", str(core), *command],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline()), kind


def start_bacpy_server(core: int) -> tuple[subprocess.Popen[str], str]:
    """``protobench serve bacnet-ip`` (bac-py's 40-object server) pinned to ``core``."""
    command = ["taskset", "-c", str(core), str(PYTHON), "-m", "protobench", "serve", "bacnet-ip"]
    process = subprocess.Popen(
        [*command, "--port", "0", "--announce"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())["url"]


# -- the clients (each runs in its own pinned process) ------------------------------


async def protobench_client(
    url: str,
    sessions: int,
    warmup: float,
    duration: float,
    reuse: float,
    server_pid: int,
    rate: float = 0.0,
    clock: str = "kernel",
) -> dict[str, Any]:
    """protobench's read-property sessions in the engine's closed-model driver, or in its
    open-model driver (``ArrivalDriver``, as ``protobench run --rate``) when ``rate`` > 0;
    on the kernel's ``clock`` (a reactor reads the lanes with their stamps) or the user's."""
    support = probe()
    reactor = Reactor(send=support.send) if clock == "kernel" and support.receive else None
    plugin = BacnetIpProtocol()
    params = ReadPropertyParams(objects=["analog-input:*"])
    options = BacnetIpOptions(reuse_after=reuse)
    recorder = OpRecorder("read-property")
    slots = [
        Slot(
            plugin,
            SessionContext(
                url, "read-property", "read-property", i, 0, params, options, 5.0, reactor=reactor
            ),
            recorder,
        )
        for i in range(sessions)
    ]
    for slot in slots:
        if not await slot.open():
            raise SystemExit(f"session did not open: {recorder.last_errors}")
    state = RunState()
    paced: asyncio.Task[None] | None = None
    if rate > 0:
        driver = ArrivalDriver(slots, recorder, state, rate, None, 0.0)
        paced = asyncio.create_task(driver.run(time.perf_counter_ns()))
    else:
        ClosedDriver(slots, recorder, state).start()
    await asyncio.sleep(warmup)
    recorder.flush()
    hist = new_histogram()
    requests = errors = late = 0
    window = Window(server_pid)
    window.start()
    while time.perf_counter() - window.t0 < duration:
        await asyncio.sleep(1.0)
        item = recorder.flush()
        requests += item.ok
        errors += item.error_count
        late += item.late
        if item.hist:
            hist.decode_and_add(item.hist)
    measured = window.stop()
    state.stop()
    if paced is not None:
        await paced
    sockets = sum(len(s.session.client.lanes) for s in slots if isinstance(s.session, LeanSession))
    for slot in slots:
        await slot.close()
    return {
        "requests": requests,
        "errors": errors,
        "p50_us": hist.get_value_at_percentile(50),
        "p99_us": hist.get_value_at_percentile(99),
        "sockets": sockets,
        "rate": rate,
        "late": late,
        **measured,
    }


async def bacpy_client(
    url: str, tasks: int, warmup: float, duration: float, server_pid: int, rate: float = 0.0
) -> dict[str, Any]:
    """bac-py's Client.read from ``tasks`` concurrent tasks, AI-1..10 in turn, each task
    reading back-to-back, or at ``rate`` per second in all when ``rate`` > 0.

    Paced, arrival ``n`` is due at ``start + n / rate`` and belongs to task ``n % tasks``,
    so each task sleeps until its next due time, reads, and sleeps again. An arrival whose
    task is still reading at its due time is ``late`` (the task then reads at once, behind
    its schedule). Latency is measured from the due time, as protobench's open model does.
    """
    address = parse_target(url).endpoint
    hist = new_histogram()
    counts = {"requests": 0, "errors": 0, "wrong": 0, "late": 0}
    measuring = False
    running = True
    period = 1e9 / rate if rate > 0 else 0.0
    start = time.perf_counter_ns()

    async def reader(client: Client, first: int) -> None:
        n = first
        while running:
            instance = n % 10 + 1
            if period:
                due = start + int(n * period)
                n += tasks
                wait = due - time.perf_counter_ns()
                if wait > 0:
                    await asyncio.sleep(wait / 1e9)
                elif measuring:
                    counts["late"] += 1
            else:
                n += 1
                due = time.perf_counter_ns()
            try:
                value = await client.read(address, f"ai,{instance}", "present-value")
            except Exception:
                if measuring:
                    counts["errors"] += 1
                continue
            if measuring:
                hist.record_value(max(1, (time.perf_counter_ns() - due) // 1000))
                counts["requests"] += 1
                if value != 60.0 + 1.5 * instance:
                    counts["wrong"] += 1

    config = {"interface": "127.0.0.1", "port": 0, "broadcast_address": "127.255.255.255"}
    async with Client(instance_number=3_999_000, **config) as client:  # type: ignore[arg-type]
        start = time.perf_counter_ns()
        workers = [asyncio.create_task(reader(client, i)) for i in range(tasks)]
        await asyncio.sleep(warmup)
        window = Window(server_pid)
        measuring = True
        window.start()
        await asyncio.sleep(duration)
        measuring = False
        measured = window.stop()
        running = False
        await asyncio.gather(*workers, return_exceptions=True)
    return {
        "requests": counts["requests"],
        "errors": counts["errors"],
        "p50_us": hist.get_value_at_percentile(50),
        "p99_us": hist.get_value_at_percentile(99),
        "wrong_values": counts["wrong"],
        "rate": rate,
        "late": counts["late"],
        **measured,
    }


def run_client(
    args: argparse.Namespace,
    role: str,
    url: str,
    sessions: int,
    reuse: float,
    server: str,
    server_pid: int,
    rate: float = 0.0,
) -> Result:
    """Run one client process pinned to the client core (it measures the server's CPU too);
    ``rate`` > 0 paces it (open model) instead of keeping ``sessions`` requests in flight."""
    command = ["taskset", "-c", str(args.client_core), str(PYTHON), __file__, "--role", role]
    command += ["--url", url, "--sessions", str(sessions), "--reuse", str(reuse)]
    command += ["--duration", str(args.duration), "--warmup", str(args.warmup)]
    command += ["--server-pid", str(server_pid), "--rate", str(rate), "--clock", args.clock]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=args.duration * 4 + 120,
        check=False,
        start_new_session=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{role} client failed:\n{done.stderr}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    name = "protobench" if role == "protobench" else "bac-py Client"
    if role == "protobench" and reuse == 0:
        name += " (reuse_after=0)"
    if rate > 0:
        name += f" @ {rate:,.0f}/s"
    return Result(name, server, **data)


# -- report ---------------------------------------------------------------------------


def median_result(results: list[Result]) -> Result:
    """The round with the median CPU per request."""
    ordered = sorted(results, key=lambda r: r.cpu_us)
    return ordered[len(ordered) // 2]


COLUMNS: tuple[tuple[str, str, str, Callable[[Result], Any]], ...] = (
    ("client", "<30", "", lambda r: r.client),
    ("req/s", ">9", ",.0f", lambda r: r.rps),
    ("CPU µs/req", ">11", ".2f", lambda r: r.cpu_us),
    ("req/s per core", ">15", ",.0f", lambda r: r.per_core),
    ("p50 µs", ">8", ".0f", lambda r: r.p50_us),
    ("p99 µs", ">8", ".0f", lambda r: r.p99_us),
    ("errors", ">7", "", lambda r: r.errors),
    ("sockets", ">8", "", lambda r: r.sockets),
    ("sleeps/req", ">11", ".2f", lambda r: r.sleeps_per_request),
    ("server CPU", ">11", ".0%", lambda r: r.server_cpu / r.seconds if r.seconds else 0.0),
)


PACED_COLUMNS: tuple[tuple[str, str, str, Callable[[Result], Any]], ...] = (
    ("client", "<36", "", lambda r: r.client),
    *COLUMNS[1:],
    ("late", ">6", ".0%", lambda r: r.late / r.requests if r.requests else 0.0),
)


def print_table(
    title: str,
    rows: list[Result],
    columns: tuple[tuple[str, str, str, Callable[[Result], Any]], ...] = COLUMNS,
) -> None:
    print(f"\n{title}")
    print("  " + " ".join(f"{name:{width}}" for name, width, _, _ in columns))
    for row in rows:
        print("  " + " ".join(f"{get(row):{width}{fmt}}" for _, width, fmt, get in columns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--sessions", type=int, default=64, help="sessions against the fast responder"
    )
    parser.add_argument(
        "--server-sessions", type=int, default=32, help="sessions/tasks against bac-py"
    )
    parser.add_argument(
        "--paced-rate",
        type=float,
        default=8000.0,
        help="req/s of both clients in the paced measurement against bac-py (0: skip it)",
    )
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--client-core", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument(
        "--clock",
        choices=["kernel", "user"],
        default="kernel",
        help="protobench's clock (kernel: its lanes read the kernel's stamps, as `run`'s default)",
    )
    parser.add_argument(
        "--role", choices=["protobench", "bacpy", "responder"], help=argparse.SUPPRESS
    )
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--reuse", type=float, default=10.0, help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.role == "responder":
        uvloop.run(python_responder())
        return 0
    if args.role == "protobench":
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2
        )
        out = uvloop.run(
            protobench_client(
                args.url,
                args.sessions,
                args.warmup,
                args.duration,
                args.reuse,
                args.server_pid,
                args.rate,
                args.clock,
            )
        )
        print(json.dumps(out))
        return 0
    if args.role == "bacpy":
        out = uvloop.run(
            bacpy_client(
                args.url, args.sessions, args.warmup, args.duration, args.server_pid, args.rate
            )
        )
        print(json.dumps(out))
        return 0

    fast: dict[str, list[Result]] = {"default": [], "no-reuse": [], "bacpy-fast": []}
    versus: dict[str, list[Result]] = {"protobench": [], "bacpy": []}
    paced: dict[str, list[Result]] = {"paced-engine": [], "paced-bacpy": []}
    rate = args.paced_rate
    with tempfile.TemporaryDirectory(prefix="bacnet-bench-") as tmp:
        responder, port, kind = start_responder(Path(tmp), args.server_core)
        url = f"bacnet://127.0.0.1:{port}/?device={DEVICE}"
        try:
            for _ in range(args.rounds):
                fast["default"].append(
                    run_client(args, "protobench", url, args.sessions, 10.0, kind, responder.pid)
                )
                fast["no-reuse"].append(
                    run_client(args, "protobench", url, args.sessions, 0.0, kind, responder.pid)
                )
                fast["bacpy-fast"].append(
                    run_client(args, "bacpy", url, args.sessions, 0.0, kind, responder.pid)
                )
        finally:
            responder.terminate()
            responder.wait()
        server, url = start_bacpy_server(args.server_core)
        try:
            for _ in range(args.rounds):
                versus["protobench"].append(
                    run_client(
                        args, "protobench", url, args.server_sessions, 10.0, "bac-py", server.pid
                    )
                )
                versus["bacpy"].append(
                    run_client(args, "bacpy", url, args.server_sessions, 10.0, "bac-py", server.pid)
                )
                if rate <= 0:
                    continue
                for name, role in (("paced-engine", "protobench"), ("paced-bacpy", "bacpy")):
                    paced[name].append(
                        run_client(
                            args, role, url, args.server_sessions, 10.0, "bac-py", server.pid, rate
                        )
                    )
        finally:
            server.terminate()
            server.wait()

    print(
        f"BACnet/IP ReadProperty, {args.rounds} rounds of {args.duration:g} s (median round shown);"
    )
    cores = f"client on core {args.client_core}, server on core {args.server_core}"
    print(f"{cores}, {os.cpu_count()} cores")
    hot = [median_result(fast[name]) for name in ("default", "no-reuse", "bacpy-fast")]
    print_table(
        f"1. protobench hot path against a pre-encoded {kind} responder, {args.sessions} sessions",
        hot,
    )
    ours, theirs = median_result(versus["protobench"]), median_result(versus["bacpy"])
    print_table(
        f"2. against bac-py's 40-object stress server, {args.server_sessions} sessions / tasks",
        [ours, theirs],
    )
    pacing = [median_result(rounds) for rounds in paced.values() if rounds]
    if pacing:
        print_table(
            f"3. against bac-py's stress server, both paced at {rate:,.0f} req/s (open model), "
            f"{args.server_sessions} sessions / tasks",
            pacing,
            PACED_COLUMNS,
        )
    print("\nTargets:")
    per_core = hot[0].per_core
    print(
        f"  ReadProperty per client core (fast responder): {per_core:,.0f}/s (target >= 100,000/s)"
    )
    ratio = ours.cpu_us / theirs.cpu_us
    both = f"{ours.cpu_us:.1f} / {theirs.cpu_us:.1f} µs = {ratio:.2f}"
    print(f"  client CPU per request, protobench / bac-py Client: {both} (target <= 0.20)")
    fast_ratio = hot[0].cpu_us / hot[2].cpu_us
    both = f"{hot[0].cpu_us:.1f} / {hot[2].cpu_us:.1f} µs = {fast_ratio:.2f}"
    print(f"  the same against the fast responder (no idle wake-ups): {both}")
    ratios = {"bacpy_server": ratio, "fast_responder": fast_ratio}
    if pacing:
        engine, bacpy = pacing
        ratios["paced_engine"] = engine.cpu_us / bacpy.cpu_us
        both = f"{engine.cpu_us:.1f} / {bacpy.cpu_us:.1f} µs = {ratios['paced_engine']:.2f}"
        label = "protobench's engine's ArrivalDriver"
        print(f"  the same, both paced at {rate:,.0f}/s, {label}: {both}")
        behind = [
            f"{r.client} {r.rps:,.0f}/s"
            for rounds in paced.values()
            for r in rounds
            if r.rps < 0.99 * rate
        ]
        sustained = ", ".join(f"{r.rps:,.0f}" for r in pacing)
        verdict = f"FELL BEHIND: {'; '.join(behind)}" if behind else "every round within 1%"
        print(f"  paced rate achieved (req/s, median rounds): {sustained}; {verdict}")
    wrong = theirs.wrong_values / theirs.requests if theirs.requests else 0.0
    print(f"  bac-py Client reads that returned another object's value: {wrong:.1%}", end="")
    if pacing:
        paced_wrong = pacing[1].wrong_values / pacing[1].requests if pacing[1].requests else 0.0
        print(f" (paced: {paced_wrong:.1%})", end="")
    print()
    print(
        "  rounds, CPU µs/req: "
        + "; ".join(
            f"{name} " + ", ".join(f"{r.cpu_us:.1f}" for r in rounds)
            for name, rounds in {**fast, **versus, **paced}.items()
            if rounds
        )
    )
    if args.json:
        every = {
            name: [asdict(r) for r in rounds]
            for name, rounds in {**fast, **versus, **paced}.items()
        }
        print(json.dumps({"responder": kind, "rounds": every, "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
