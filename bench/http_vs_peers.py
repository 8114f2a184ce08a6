"""protobench's HTTP engine against other load generators, on one core each.

nginx (one worker process, pinned to ``--server-core``) serves a 13-byte
``Hello, World!`` on 127.0.0.1. Each generator in turn runs pinned to
``--client-core`` with ``--connections`` keep-alive connections for
``--duration`` seconds, ``--rounds`` times (generators interleaved; a ratio
to wrk or oha is the median of the per-round ratios, so drift in the
machine's speed between rounds cancels out). For each run it records
requests per second, the generator's CPU time per request (user + system,
all its processes) and nginx's CPU use.

Generators:

* ``protobench``: ``protobench run http-get --target URL --processes 1
  --connections N --duration D --warmup W --ndjson`` (one worker process,
  every latency recorded). req/s is the report's sustain throughput; CPU is
  measured over the sustain intervals only (controller + worker, startup
  and warmup excluded), from the interval lines as they arrive.
* ``protobench-plugin``: the http plugin's sessions driven in this script's
  own closed loop (``submit`` back-to-back from the completion callback,
  ``perf_counter_ns`` deltas appended to an ``array('q')`` and folded into
  an HdrHistogram every second, as the engine's ``OpRecorder`` does): the
  plugin's cost without the engine's.
* every peer found on PATH: wrk, oha, k6, hey, locust (FastHttpUser, one
  process). CPU is the whole process's (``wait4`` rusage) over its requests.

Every process (nginx, each generator) starts in its own session: with
Linux's scheduler autogroups, processes of one session share one weight, so a
generator in the script's session would get only part of its core while a
shared machine's other jobs compete for it (protobench's workers start their
own sessions anyway).

With ``--open [RATE ...]`` (default 2,000, 8,000 and 20,000/s) it runs open-model
rounds instead: ``protobench run http-get --rate R/s`` and wrk2 (``-R R``, one thread)
at each rate, interleaved, and prints per rate and generator the CPU per request (for
protobench: the worker's, and the worker's plus the controller's), nginx's CPU, the
latency's p50 and p99 (both from the intended send time), protobench's send lateness
(intended -> sent, ``send_lateness_us``), each generator's sleeps per request (voluntary
context switches: protobench's worker over the sustain window, wrk2 over its run) and
each generator's CPU ratio to wrk2. ``--precision 100us 1ms`` runs protobench once per
``--pacing-precision`` (named ``protobench/100us``...). wrk2
calibrates for its first 10 s, so its runs last ``--duration`` + 11 s and its CPU per
request is over the whole run. wrk2 is not packaged: it is used when ``WRK2=/path/to/wrk``
is set, ``wrk2`` is on PATH, or it is built at ``~/wrk2/wrk`` (``git clone
https://github.com/giltene/wrk2 ~/wrk2 && make -C ~/wrk2``); otherwise the rounds say it is
missing and run protobench alone.

``--clock kernel user`` runs protobench once per clock (``protobench/kernel``,
``protobench/user``), in either model. protobench's CPU is counted per process over its
sustain window (:class:`ProcessSamples`: each process from the window's first sample, or
its birth, to its last sample), so a process that exits or is missed by a sample never
takes CPU out of the figure; a figure that cannot be right (negative, or more than every
core for the window) leaves the round out with a line saying why.

Run it as ``bench/http_vs_peers [--duration 10] [--rounds 3]``. nginx is
installed from Debian (``apt-get install nginx-light``) when missing. The
machine may be shared: look at the spread between rounds and at nginx's CPU
(a generator cannot beat a saturated server) before reading the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import uvloop

from protobench.engine.metrics import fold, new_histogram
from protobench.protocols.base import CallbackSession, SessionContext
from protobench.protocols.http.options import HttpOptions, RequestParams
from protobench.protocols.http.plugin import HttpProtocol
from protobench.vocab.errors import OpError

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
PROTOBENCH = REPO / ".venv" / "bin" / "protobench"
BODY = "Hello, World!"


@dataclass
class Result:
    """One generator's run."""

    generator: str
    requests: int
    seconds: float
    cpu_seconds: float
    errors: int = 0
    server_cpu: float = 0.0
    note: str = ""
    round_index: int = 0
    rate: float = 0.0
    """The open model's target rate (0: closed model)."""
    worker_cpu_seconds: float = float("nan")
    """protobench's worker alone (the rest of ``cpu_seconds`` is its controller's)."""
    p50_us: float = float("nan")
    p99_us: float = float("nan")
    lateness_p50_us: float = float("nan")
    lateness_p99_us: float = float("nan")
    sleeps: float = float("nan")
    """Times the generator (protobench: its worker) blocked and was woken (voluntary
    context switches), over the same window as its CPU: the wake-ups that cost a paced
    generator most of its CPU at low rates."""

    @property
    def sleeps_per_request(self) -> float:
        return self.sleeps / self.requests if self.requests else float("nan")

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_request(self) -> float:
        return self.cpu_seconds / self.requests * 1e6 if self.requests else float("nan")

    @property
    def worker_cpu_us_per_request(self) -> float:
        if not self.requests or self.worker_cpu_seconds != self.worker_cpu_seconds:
            return self.cpu_us_per_request
        return self.worker_cpu_seconds / self.requests * 1e6


@dataclass
class Settings:
    duration: float
    warmup: float
    connections: int
    server_core: int
    client_core: int
    workdir: Path
    url: str = ""
    server_pid: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


# -- the server -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_nginx() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found:
        return found
    print("nginx not found: installing nginx-light from Debian", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", "nginx-light"], check=True, env=env)
    return shutil.which("nginx") or "/usr/sbin/nginx"


def start_nginx(settings: Settings, listen: str = "") -> subprocess.Popen[bytes]:
    """nginx as the module's docstring says; ``listen`` follows the port (``http2``)."""
    port = free_port()
    root = settings.workdir / "nginx"
    (root / "logs").mkdir(parents=True, exist_ok=True)
    conf = root / "nginx.conf"
    conf.write_text(
        f"""worker_processes 1;
daemon off;
master_process off;
pid {root}/nginx.pid;
error_log {root}/logs/error.log warn;
events {{ worker_connections 4096; use epoll; }}
http {{
  access_log off;
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  server {{
    listen 127.0.0.1:{port} {listen} backlog=4096;
    location / {{ default_type text/plain; return 200 "{BODY}"; }}
  }}
}}
"""
    )
    command = ["taskset", "-c", str(settings.server_core), find_nginx()]
    command += ["-p", str(root), "-c", str(conf), "-e", str(root / "logs" / "error.log")]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if process.poll() is not None:
                error = process.stderr.read().decode() if process.stderr else ""
                raise SystemExit(f"nginx did not start: {error}") from None
            time.sleep(0.05)
    settings.url = f"http://127.0.0.1:{port}/"
    settings.server_pid = process.pid
    return process


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its live descendants."""
    return sum(tree_cpu_split(pid))


def tree_cpu_split(pid: int) -> tuple[float, float]:
    """CPU seconds of a process, and of all its live descendants."""
    own = descendants = 0.0
    for sample in ProcessSamples.of(pid).values():
        if sample.root:
            own = sample.cpu
        else:
            descendants += sample.cpu
    return own, descendants


@dataclass(frozen=True)
class ProcessSample:
    """One process's CPU seconds and voluntary context switches so far."""

    cpu: float
    sleeps: int
    root: bool


class ProcessSamples:
    """Per-process CPU of a process tree over a window: from its first sample to its last.

    Each process counts from where the window first saw it (0 when it was born
    after) to its last sample (for one that ended in between: the last figures
    read of it), so a process that exits or is missed by a later sample never
    takes its CPU out of the total (the sum over the processes alive at two
    instants did: one round of an open-model run printed -20 µs per request).
    """

    def __init__(self) -> None:
        self.first: dict[int, ProcessSample] = {}
        self.last: dict[int, ProcessSample] = {}
        self.samples = 0

    @staticmethod
    def of(pid: int) -> dict[int, ProcessSample]:
        """The tree of ``pid`` now (the processes that can still be read)."""
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return {}
        found = {}
        for proc in procs:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    switches = proc.num_ctx_switches().voluntary
            except psutil.NoSuchProcess:
                continue
            found[proc.pid] = ProcessSample(times.user + times.system, switches, proc.pid == pid)
        return found

    def sample(self, pid: int) -> None:
        """Take the tree's figures now: the window's start on the first call, its end after."""
        now = self.of(pid)
        if not self.samples:
            self.first = dict(now)
        self.last.update(now)
        self.samples += 1

    def window(self) -> tuple[float, float, float]:
        """CPU seconds of the whole tree and of its descendants alone, and their sleeps."""
        total = descendants = sleeps = 0.0
        for pid, end in self.last.items():
            start = self.first.get(pid, ProcessSample(0.0, 0, end.root))
            cpu = end.cpu - start.cpu
            total += cpu
            if not end.root:
                descendants += cpu
                sleeps += end.sleeps - start.sleeps
        return total, descendants, sleeps


def impossible(cpu_seconds: float, wall_seconds: float) -> str | None:
    """Why a CPU figure cannot be right (none, negative, more than every core), or None."""
    if math.isnan(cpu_seconds):
        return "no CPU window (fewer than 3 sustain intervals)"
    if cpu_seconds < 0:
        return f"negative CPU ({cpu_seconds:.3f} s)"
    cores = os.cpu_count() or 1
    if cpu_seconds > wall_seconds * cores * 1.05:
        return f"{cpu_seconds:.2f} s of CPU in {wall_seconds:.2f} s on {cores} cores"
    return None


# -- running a command pinned -----------------------------------------------------


def run_pinned(settings: Settings, command: list[str], **kwargs: Any) -> str:
    """Run ``command`` on the client core; return its output (stdout and stderr)."""
    pinned = ["taskset", "-c", str(settings.client_core), *command]
    done = subprocess.run(
        pinned,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=settings.duration * 3 + 120,
        check=False,
        start_new_session=True,
        **kwargs,
    )
    return str(done.stdout)


def children_sleeps() -> int:
    """Voluntary context switches of every child this process has reaped."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw


def children_cpu() -> float:
    """CPU seconds of every child this process has reaped (and of their reaped children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_peer(settings: Settings, command: list[str], **kwargs: Any) -> tuple[str, float]:
    """Run a peer pinned; return its output and its CPU seconds (all its processes)."""
    before = children_cpu()
    out = run_pinned(settings, command, **kwargs)
    return out, children_cpu() - before


# -- peers ------------------------------------------------------------------------


def run_wrk(settings: Settings) -> Result:
    d, c = settings.duration, settings.connections
    out, cpu = timed_peer(settings, ["wrk", "-t1", f"-c{c}", f"-d{d:g}s", settings.url])
    return _wrk_result("wrk", out, cpu)


def _wrk_result(name: str, out: str, cpu: float) -> Result:
    """A run of wrk or wrk2 from its output."""
    match = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    if not match:
        raise RuntimeError(f"{name} output not understood:\n{out}")
    requests = int(match.group(1))
    seconds = float(match.group(2)) * {"s": 1.0, "ms": 1e-3, "m": 60.0}[match.group(3)]
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return Result(name, requests, seconds, cpu, errors + (int(non2xx.group(1)) if non2xx else 0))


def run_oha(settings: Settings) -> Result:
    d, c = settings.duration, settings.connections
    command = ["oha", "-z", f"{d:g}s", "-c", str(c), "--no-tui", "--output-format", "json"]
    out, cpu = timed_peer(settings, [*command, settings.url])
    data = json.loads(out[out.index("{") :])
    codes = data.get("statusCodeDistribution", {})
    requests = sum(int(v) for k, v in codes.items() if k.startswith("2"))
    errors = sum(int(v) for k, v in codes.items() if not k.startswith("2"))
    errors += sum(
        int(v)
        for k, v in data.get("errorDistribution", {}).items()
        if k != "aborted due to deadline"  # the requests in flight when the run ends
    )
    return Result("oha", requests, float(data["summary"]["total"]), cpu, errors)


def run_hey(settings: Settings) -> Result:
    d, c = settings.duration, settings.connections
    out, cpu = timed_peer(settings, ["hey", "-z", f"{d:g}s", "-c", str(c), settings.url])
    total = re.search(r"Total:\s+([\d.]+) secs", out)
    ok = re.search(r"\[200\]\s+(\d+) responses", out)
    if not total or not ok:
        raise RuntimeError(f"hey output not understood:\n{out}")
    errors = sum(
        int(n) for code, n in re.findall(r"\[(\d+)\]\s+(\d+) responses", out) if code != "200"
    )
    return Result("hey", int(ok.group(1)), float(total.group(1)), cpu, errors)


def run_k6(settings: Settings) -> Result:
    script = settings.workdir / "k6.js"
    script.write_text(
        "import http from 'k6/http';\n"
        f"export const options = {{ vus: {settings.connections},"
        f" duration: '{settings.duration:g}s', discardResponseBodies: true }};\n"
        f"export default function () {{ http.get('{settings.url}'); }}\n"
    )
    summary = settings.workdir / "k6-summary.json"
    command = [
        "k6",
        "run",
        "--quiet",
        "--no-usage-report",
        "--summary-export",
        str(summary),
        str(script),
    ]
    _, cpu = timed_peer(settings, command)
    metrics = json.loads(summary.read_text())["metrics"]
    requests = int(metrics["http_reqs"]["count"])
    failed = metrics.get("http_req_failed", {})
    errors = int(failed.get("passes", 0))
    seconds = requests / float(metrics["http_reqs"]["rate"])
    return Result("k6", requests - errors, seconds, cpu, errors)


def run_locust(settings: Settings) -> Result:
    locustfile = settings.workdir / "locustfile.py"
    locustfile.write_text(
        "from locust import FastHttpUser, task\n\n"
        "class Get(FastHttpUser):\n"
        "    @task\n"
        "    def get(self):\n"
        "        self.client.get('/')\n"
    )
    prefix = settings.workdir / "locust"
    c = settings.connections
    command = ["locust", "-f", str(locustfile), "--headless", "-u", str(c), "-r", str(c)]
    command += ["-t", f"{settings.duration:g}s", "--host", settings.url.rstrip("/")]
    command += ["--csv", str(prefix), "--only-summary", "--loglevel", "WARNING"]
    _, cpu = timed_peer(settings, command, cwd=settings.workdir)
    lines = (prefix.parent / f"{prefix.name}_stats.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = next(line.split(",") for line in lines[1:] if ",Aggregated," in line)
    values = dict(zip(header, row, strict=False))
    requests = int(values["Request Count"])
    failures = int(values["Failure Count"])
    rps = float(values["Requests/s"])
    return Result("locust", requests - failures, requests / rps if rps else 0.0, cpu, failures)


WRK2_CALIBRATION = 11.0
"""Seconds wrk2 spends calibrating before it records (10 s + 5 ms per connection)."""


def find_wrk2() -> str | None:
    """wrk2's binary: ``WRK2=/path/to/wrk`` in the environment, ``wrk2`` on PATH, or a build at
    ``~/wrk2/wrk`` (it is not packaged). A ``WRK2`` that is not an executable is an error."""
    given = os.environ.get("WRK2")
    if given:
        if not os.access(given, os.X_OK):
            raise SystemExit(f"WRK2={given}: not an executable file")
        return given
    built = Path.home() / "wrk2" / "wrk"
    return shutil.which("wrk2") or (str(built) if built.exists() else None)


def wrk_duration_us(text: str) -> float:
    """A latency printed by wrk2 (``812.00us``, ``1.03ms``, ``2.10s``, ``1.5m``) in µs."""
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not match:
        raise RuntimeError(f"wrk2 latency not understood: {text}")
    scale = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6}[match.group(2)]
    return float(match.group(1)) * scale


def run_wrk2(settings: Settings, rate: float, binary: str) -> Result:
    """wrk2 at ``rate`` (one thread); latency from the intended times, after its calibration."""
    d, c = settings.duration + WRK2_CALIBRATION, settings.connections
    command = [binary, "-t1", f"-c{c}", f"-d{d:g}s", f"-R{rate:g}", "--latency", settings.url]
    sleeps_before = children_sleeps()
    out, cpu = timed_peer(settings, command)
    result = _wrk_result("wrk2", out, cpu)
    result.rate = rate
    result.sleeps = float(children_sleeps() - sleeps_before)
    distribution = out.split("Latency Distribution", 1)[-1]
    for name, percent in (("p50_us", "50.000"), ("p99_us", "99.000")):
        found = re.search(rf"^\s*{percent}%\s+(\S+)", distribution, re.MULTILINE)
        if found:
            setattr(result, name, wrk_duration_us(found.group(1)))
    return result


# -- protobench -------------------------------------------------------------------


def run_protobench(
    settings: Settings,
    profile: str = "http-get",
    rate: float = 0.0,
    precision: str = "",
    clock: str = "",
    extra: Sequence[str] = (),
) -> Result:
    """``protobench run PROFILE`` in one worker process; CPU over the sustain intervals only.

    With ``rate``, the open model at that rate (latency and send lateness recorded), with
    ``precision`` as its ``--pacing-precision`` if given; ``clock`` is its ``--clock``
    (default: protobench's); ``extra`` are more arguments (``--h2c --streams 10``). A
    ``profile`` that is a URL is a one-line run (``protobench run URL``).
    """
    command = ["taskset", "-c", str(settings.client_core), str(PROTOBENCH), "run", profile]
    if "://" not in profile:  # a profile's name; a URL is a one-line run of its own
        command += ["--target", settings.url]
    command += ["--processes", "1"]
    if rate:
        command += ["--rate", f"{rate:g}/s"]
    if precision:
        command += ["--pacing-precision", precision]
    if clock:
        command += ["--clock", clock]
    command += ["--connections", str(settings.connections)]
    command += ["--duration", f"{settings.duration:g}s", "--warmup", f"{settings.warmup:g}s"]
    command += ["--ndjson", "--no-tui", "--quiet", *extra]
    command += ["--snapshots-dir", str(settings.workdir / "snapshots")]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=settings.workdir,
        start_new_session=True,
    )
    assert process.stdout is not None
    samples = ProcessSamples()
    oks: list[int] = []
    started = ended = 0.0
    report: dict[str, Any] = {}
    for line in process.stdout:
        item = json.loads(line)
        if item.get("type") == "interval" and item.get("phase") == "sustain":
            oks.append(sum(op["ok"] for op in item["ops"].values()))
            samples.sample(process.pid)
            ended = time.monotonic()
            started = started or ended
        elif item.get("type") == "report":
            report = item
    stderr = process.stderr.read() if process.stderr else ""
    process.wait(timeout=60)
    if not report:
        raise RuntimeError(f"protobench run failed ({process.returncode}):\n{stderr[-3000:]}")
    total = report["phases"]["sustain"]["total"]
    note = ""
    if report["verdicts"].get("generator_bound"):
        note = f"generator-bound: {report['verdicts'].get('reason')}"
    if len(oks) >= 3:
        cpu, worker_cpu, sleeps = samples.window()
        requests_in_window = sum(oks[1:])
    else:
        cpu = worker_cpu = sleeps = float("nan")
        requests_in_window = 1
    wrong = impossible(cpu, ended - started)
    if wrong is not None:
        raise RuntimeError(f"impossible CPU figure, round left out: {wrong}")
    share = int(total["ok"]) / requests_in_window
    result = Result(
        "/".join(["protobench", *(v for v in (precision, clock) if v)]),
        int(total["ok"]),
        int(total["ok"]) / float(total["throughput"]) if total["throughput"] else 0.0,
        cpu * share,
        int(total["errors"]),
        note=note,
        rate=rate,
        worker_cpu_seconds=worker_cpu * share,
        sleeps=sleeps * share,
    )
    latency = total.get("latency_us", {})
    result.p50_us, result.p99_us = latency.get("p50", math.nan), latency.get("p99", math.nan)
    lateness = total.get("send_lateness_us", {})
    result.lateness_p50_us = lateness.get("p50", math.nan)
    result.lateness_p99_us = lateness.get("p99", math.nan)
    return result


def run_plugin_driver(settings: Settings) -> Result:
    """The http plugin in this script's closed loop, in a pinned child process."""
    command = [str(PYTHON), __file__, "--driver", settings.url]
    command += ["--duration", str(settings.duration), "--warmup", str(settings.warmup)]
    command += ["--connections", str(settings.connections)]
    out = run_pinned(settings, command)
    data = json.loads(out.strip().splitlines()[-1])
    return Result(
        "protobench-plugin", data["requests"], data["seconds"], data["cpu"], data["errors"]
    )


async def _drive(url: str, connections: int, warmup: float, duration: float) -> dict[str, Any]:
    plugin = HttpProtocol()
    params, options = RequestParams(method="GET", path="/"), HttpOptions()
    sessions = []
    for index in range(connections):
        ctx = SessionContext(url, "get", "request", index, 0, params, options, 5.0)
        session = await plugin.open_session(ctx)
        assert isinstance(session, CallbackSession)
        sessions.append(session)
    perf_ns = time.perf_counter_ns
    latencies: array[int] = array("q")
    counters = {"errors": 0, "running": True}
    hist = new_histogram()

    class User:
        __slots__ = ("done", "session", "start")

        def __init__(self, session: CallbackSession) -> None:
            self.session = session
            self.done = self._done
            self.start = 0

        def begin(self) -> None:
            self.start = perf_ns()
            self.session.submit(self.done)

        def _done(self, error: OpError | None, nbytes: int) -> None:
            now = perf_ns()
            if not counters["running"]:
                return
            if error is None:
                latencies.append(now - self.start)
            else:
                counters["errors"] += 1
            self.start = now
            self.session.submit(self.done)

    for user in [User(s) for s in sessions]:
        user.begin()
    await asyncio.sleep(warmup)
    latencies = array("q")
    counters["errors"] = 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    requests = 0
    ended = started + duration
    while (now := time.perf_counter()) < ended:
        await asyncio.sleep(min(1.0, ended - now))
        batch, latencies = latencies, array("q")
        requests += len(batch)
        fold(hist, batch)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    counters["running"] = False
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    p99 = hist.get_value_at_percentile(99.0)
    for session in sessions:
        await session.close()
    return {
        "requests": requests,
        "seconds": seconds,
        "cpu": cpu,
        "errors": counters["errors"],
        "p99_us": p99,
    }


# -- the table --------------------------------------------------------------------

PEERS = {
    "wrk": run_wrk,
    "oha": run_oha,
    "k6": run_k6,
    "hey": run_hey,
    "locust": run_locust,
}


def generators(selected: list[str] | None, clocks: list[str] | None = None) -> dict[str, Any]:
    """The closed-model runs of one round: protobench (once per ``--clock`` given), the plugin
    alone, and every peer on PATH."""
    found: dict[str, Any] = {
        "/".join(["protobench", *([clock] if clock else [])]): partial(run_protobench, clock=clock)
        for clock in clocks or [""]
    }
    found["protobench-plugin"] = run_plugin_driver
    for name, runner in PEERS.items():
        if shutil.which(name):
            found[name] = runner
    if selected:
        found = {k: v for k, v in found.items() if k.split("/")[0] in selected}
    return found


def summarize(
    results: list[Result], references: tuple[str, ...] = ("wrk",)
) -> list[dict[str, Any]]:
    """Medians per generator, and each one's ratio to every reference generator.

    A ratio is the median of the per-round ratios (each generator's rate over
    the reference's rate in the same round): rounds are interleaved, so a
    round's pair ran under the same machine load, and drift between rounds
    cancels out instead of widening the ratio's error.
    """
    names = list(dict.fromkeys(r.generator for r in results))
    rows = []
    for name in names:
        runs = [r for r in results if r.generator == name]
        rates = [r.rps for r in runs]
        row: dict[str, Any] = {
            "generator": name,
            "rate_median": statistics.median(rates),
            "rate_min": min(rates),
            "rate_max": max(rates),
            "cpu_us_per_op": statistics.median(r.cpu_us_per_request for r in runs),
            "server_cpu_median": statistics.median(r.server_cpu for r in runs),
            "errors": sum(r.errors for r in runs),
            "notes": sorted({r.note for r in runs if r.note}),
        }
        for reference in references:
            base = {r.round_index: r.rps for r in results if r.generator == reference and r.rps}
            paired = [r.rps / base[r.round_index] for r in runs if r.round_index in base]
            row[f"ratio_to_{reference}"] = statistics.median(paired) if paired else None
        rows.append(row)
    return rows


def print_table(
    rows: list[dict[str, Any]],
    rounds: int,
    references: tuple[str, ...] = ("wrk",),
    unit: str = "req",
    server: str = "nginx",
    what: str = "request",
) -> None:
    rate, cpu = f"{unit}/s (median)", f"CPU µs/{unit}"
    heads = "".join(f" {'x ' + reference:>7}" for reference in references)
    print(
        f"\n{'generator':<18} {rate:>15} {'min..max':>18} {cpu:>11}"
        f"{heads} {server + ' CPU':>10} {'errors':>7}"
    )
    for row in rows:
        ratios = ""
        for reference in references:
            value = row[f"ratio_to_{reference}"]
            ratios += f" {value:>7.2f}" if value is not None else f" {'-':>7}"
        spread = f"{row['rate_min'] / 1000:.1f}k..{row['rate_max'] / 1000:.1f}k"
        print(
            f"{row['generator']:<18} {row['rate_median']:>15,.0f} {spread:>18}"
            f" {row['cpu_us_per_op']:>11.2f}{ratios} {row['server_cpu_median']:>9.0%}"
            f" {row['errors']:>7}"
        )
        for note in row["notes"]:
            print(f"{'':<18}   note: {note}")
    print(
        f"({rounds} rounds; CPU = the generator's user+system time per {what}; "
        f"x = median of the per-round ratios of {unit}/s)"
    )


def common_arguments(doc: str, connections: int) -> argparse.ArgumentParser:
    """The arguments every peers bench takes (duration, rounds, connections, cores)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run (10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="protobench warmup (2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (3)")
    parser.add_argument(
        "--connections", type=int, default=connections, help=f"connections ({connections})"
    )
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--client-core", type=int, default=1)
    return parser


def settings_from(args: argparse.Namespace, workdir: Path) -> Settings:
    return Settings(
        duration=args.duration,
        warmup=args.warmup,
        connections=args.connections,
        server_core=args.server_core,
        client_core=args.client_core,
        workdir=workdir,
    )


def open_generators(
    rates: list[float],
    selected: list[str] | None,
    precisions: list[str] | None = None,
    clocks: list[str] | None = None,
) -> dict[str, Any]:
    """The open-model runs of one round: protobench and wrk2 (when built) at every rate.

    With ``precisions``, protobench runs once per pacing precision (``protobench/1ms``),
    with ``clocks`` once per ``--clock`` (``protobench/user``), or per pair of them.
    """
    wrk2 = find_wrk2()
    if wrk2 is None:
        print(
            "wrk2: not found (not packaged): build it with `git clone"
            " https://github.com/giltene/wrk2 ~/wrk2 && make -C ~/wrk2`, or put `wrk2` on"
            " PATH; running protobench alone",
            file=sys.stderr,
        )
    found: dict[str, Any] = {}
    for rate in rates:
        for precision in precisions or [""]:
            for clock in clocks or [""]:
                name = "/".join(["protobench", *(v for v in (precision, clock) if v)])
                found[f"{name}@{rate:g}"] = partial(
                    run_protobench, rate=rate, precision=precision, clock=clock
                )
        if wrk2 is not None:
            found[f"wrk2@{rate:g}"] = partial(run_wrk2, rate=rate, binary=wrk2)
    if selected:
        found = {k: v for k, v in found.items() if k.split("@")[0].split("/")[0] in selected}
    return found


def run_rounds(
    settings: Settings, chosen: dict[str, Any], rounds: int, nginx: bool
) -> list[Result]:
    """Every chosen generator once per round, interleaved; nginx's CPU over each run."""
    results: list[Result] = []
    for round_index in range(rounds):
        for name, runner in chosen.items():
            server_before = process_cpu(settings.server_pid) if nginx else 0.0
            wall = time.perf_counter()
            try:
                result = runner(settings)
            except Exception as exc:  # a peer that fails is reported, the rest go on
                print(f"round {round_index + 1} {name}: FAILED: {exc}", file=sys.stderr)
                continue
            if nginx:
                elapsed = time.perf_counter() - wall
                result.server_cpu = (process_cpu(settings.server_pid) - server_before) / elapsed
            result.round_index = round_index
            results.append(result)
            extra = ""
            if result.rate:
                extra = (
                    f"  worker {result.worker_cpu_us_per_request:.2f} µs"
                    f"  sleeps/req {result.sleeps_per_request:.2f}  p50/p99"
                    f" {result.p50_us:.0f}/{result.p99_us:.0f} µs  send lateness p50/p99"
                    f" {result.lateness_p50_us:.0f}/{result.lateness_p99_us:.0f} µs"
                )
            print(
                f"round {round_index + 1} {name:<18} {result.rps:>10,.0f} req/s "
                f"{result.cpu_us_per_request:>7.2f} µs CPU/req  errors {result.errors}{extra}"
                + (f"  ({result.note})" if result.note else ""),
                file=sys.stderr,
            )
    return results


def summarize_open(results: list[Result]) -> list[dict[str, Any]]:
    """Per rate and generator: medians, and the CPU ratio to wrk2 (median of per-round ratios)."""
    rows = []
    for rate in sorted({r.rate for r in results}):
        at_rate = [r for r in results if r.rate == rate]
        wrk2 = {r.round_index: r.cpu_us_per_request for r in at_rate if r.generator == "wrk2"}
        for name in dict.fromkeys(r.generator for r in at_rate):
            runs = [r for r in at_rate if r.generator == name]
            paired = [
                r.worker_cpu_us_per_request / wrk2[r.round_index]
                for r in runs
                if wrk2.get(r.round_index)
            ]
            rows.append(
                {
                    "rate": rate,
                    "generator": name,
                    "rate_median": statistics.median(r.rps for r in runs),
                    "cpu_us_per_op": statistics.median(r.cpu_us_per_request for r in runs),
                    "worker_cpu_us_per_op": statistics.median(
                        r.worker_cpu_us_per_request for r in runs
                    ),
                    "cpu_ratio_to_wrk2": statistics.median(paired) if paired else None,
                    "sleeps_per_op": statistics.median(r.sleeps_per_request for r in runs),
                    "server_cpu_median": statistics.median(r.server_cpu for r in runs),
                    "p50_us": statistics.median(r.p50_us for r in runs),
                    "p99_us": statistics.median(r.p99_us for r in runs),
                    "lateness_p50_us": statistics.median(r.lateness_p50_us for r in runs),
                    "lateness_p99_us": statistics.median(r.lateness_p99_us for r in runs),
                    "errors": sum(r.errors for r in runs),
                    "notes": sorted({r.note for r in runs if r.note}),
                }
            )
    return rows


def _us(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.0f}"


def print_open_table(rows: list[dict[str, Any]], rounds: int) -> None:
    print(
        f"\n{'rate/s':>7} {'generator':<17} {'req/s':>8} {'CPU µs/req':>10} {'(worker)':>8}"
        f" {'x wrk2':>6} {'sleeps/req':>10} {'nginx':>6} {'p50 µs':>7} {'p99 µs':>8}"
        f" {'lateness p50/p99 µs':>19}"
    )
    for row in rows:
        ratio = row["cpu_ratio_to_wrk2"]
        lateness = f"{_us(row['lateness_p50_us'])}/{_us(row['lateness_p99_us'])}"
        print(
            f"{row['rate']:>7,.0f} {row['generator']:<17} {row['rate_median']:>8,.0f}"
            f" {row['cpu_us_per_op']:>10.2f} {row['worker_cpu_us_per_op']:>8.2f}"
            f" {'-' if ratio is None else format(ratio, '.2f'):>6}"
            f" {row['sleeps_per_op']:>10.2f}"
            f" {row['server_cpu_median']:>6.0%} {_us(row['p50_us']):>7} {_us(row['p99_us']):>8}"
            f" {lateness:>19}"
        )
        for note in row["notes"]:
            print(f"{'':<19} note: {note}")
    print(
        f"({rounds} rounds, medians; CPU = user+system per request, protobench's with its"
        " controller and (worker) alone; x wrk2 = the worker's CPU over wrk2's, median of the"
        " per-round ratios; sleeps/req = the generator's (worker's) voluntary context switches"
        " per request; p50/p99 from the intended send times; lateness = intended -> sent)"
    )


def main() -> int:
    parser = common_arguments(__doc__, connections=50)
    parser.add_argument("--only", nargs="*", help="run only these generators")
    parser.add_argument("--target", help="benchmark this URL instead of starting nginx")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--open",
        nargs="*",
        type=float,
        metavar="RATE",
        help="open-model rounds (protobench and wrk2) at these rates (2000 8000 20000)",
    )
    parser.add_argument(
        "--precision",
        nargs="+",
        metavar="D",
        help="open model: run protobench once per --pacing-precision (default: its default)",
    )
    parser.add_argument(
        "--clock",
        nargs="+",
        choices=["kernel", "user"],
        help="run protobench once per --clock (default: its default, the kernel's)",
    )
    parser.add_argument("--driver", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.driver:
        data = uvloop.run(_drive(args.driver, args.connections, args.warmup, args.duration))
        print(json.dumps(data))
        return 0

    with tempfile.TemporaryDirectory(prefix="protobench-bench-") as tmp:
        settings = settings_from(args, Path(tmp))
        nginx = None
        if args.target:
            settings.url = args.target
        else:
            nginx = start_nginx(settings)
        try:
            if args.open is not None:
                rates = args.open or [2000.0, 8000.0, 20000.0]
                chosen = open_generators(rates, args.only, args.precision, args.clock)
            else:
                chosen = generators(args.only, args.clock)
            print(
                f"target {settings.url} | generators: {', '.join(chosen)} | "
                f"{args.rounds} rounds x {args.duration:g}s, {args.connections} connections, "
                f"server core {args.server_core}, client core {args.client_core}, "
                f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
                file=sys.stderr,
            )
            results = run_rounds(settings, chosen, args.rounds, nginx is not None)
        finally:
            if nginx is not None:
                nginx.terminate()
                nginx.wait(timeout=10)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.open is not None:
        rows = summarize_open(results)
        print_open_table(rows, args.rounds)
    else:
        rows = summarize(results, references=("wrk", "oha"))
        print_table(rows, args.rounds, references=("wrk", "oha"))
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "runs": [asdict(r) for r in results]}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
