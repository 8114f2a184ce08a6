"""Client CPU per request: protobench's Haystack and Beckn sessions against the seeds' clients.

Two scenarios, each against protobench's own embedded target started here
(``protobench serve haystack`` / ``protobench serve beckn-bpp``, pinned to
``--server-core``):

``haystack-read``
    ``read`` of a filter with a bearer token already obtained (SCRAM login
    done before measuring), ``--connections`` concurrent requests.
    Clients: protobench's haystack plugin (its ``CallbackSession``, driven
    back-to-back from the completion callback as the engine does, latencies
    appended to an ``array('q')``), at its default ``meta`` validation and at
    ``decode`` (every value decoded by hs_py, what hs_py's own client does);
    haystack-py's ``hs_py.Client`` (aiohttp; ``read(filter, raw=True)``);
    a plain ``httpx.AsyncClient`` loop (POST the grid, check 200, ``.json()``).
``beckn-discover``
    a signed ``discover`` (fresh ids, BLAKE2b-512 digest, Ed25519 signature)
    to the verifying mock BPP. Clients: protobench's beckn plugin; a plain
    ``httpx`` loop and a plain ``aiohttp`` loop that build the same body and
    sign it with the same signer (so the difference is the client, not the
    crypto), then check the ACK.

Each client runs alone in a child process pinned to ``--client-core``, on
uvloop, for ``--seconds`` after a one-second warmup; its CPU is the child's
own user + system time over the measured window (``getrusage``). The
clients take turns for ``--rounds`` rounds; the table gives the median per
client and the ratio to protobench (goal: protobench <= 1/5 of the others'
CPU per request). Signing is measured on its own at the end (µs per body:
build, digest + sign, and the BPP's verify).

Usage: ``bench/api_clients [--seconds 5] [--rounds 3] [--connections 10]
[--filter site] [--json]``. The machine may be shared: compare rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import timeit
from array import array
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp
import hs_py
import httpx
import uvloop

from protobench.protocols.base import SessionContext
from protobench.protocols.beckn.keys import (
    DEV_KEY_ID,
    DEV_PRIVATE_KEY,
    DEV_PUBLIC_KEY,
    DEV_SUBSCRIBER_ID,
    private_key,
    public_key,
)
from protobench.protocols.beckn.options import BecknOptions, DiscoverParams
from protobench.protocols.beckn.payloads import BodyFactory
from protobench.protocols.beckn.plugin import BecknProtocol
from protobench.protocols.beckn.signing import Signer, body_digest, verify
from protobench.protocols.haystack.credentials import DEV_PASSWORD, DEV_USER
from protobench.protocols.haystack.options import HaystackOptions, ReadParams
from protobench.protocols.haystack.plugin import HaystackProtocol
from protobench.protocols.haystack.scram import bearer, login
from protobench.protocols.http.client import HttpConnection, parse_url
from protobench.vocab.errors import OpError

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
SCENARIOS: dict[str, tuple[str, ...]] = {
    "haystack-read": ("protobench", "protobench-decode", "hs_py.Client", "httpx"),
    "beckn-discover": ("protobench", "httpx", "aiohttp"),
}
PEERS: dict[str, tuple[str, ...]] = {
    "haystack-read": ("hs_py.Client", "httpx"),
    "beckn-discover": ("httpx",),
}
"""The seeds' clients the goal is measured against (aiohttp for Beckn is a reference)."""
TARGETS = {"haystack-read": "haystack", "beckn-discover": "beckn-bpp"}


@dataclass
class Result:
    """One client's measured window."""

    scenario: str
    client: str
    requests: int
    errors: int
    seconds: float
    cpu_seconds: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_us(self) -> float:
        return self.cpu_seconds / self.requests * 1e6 if self.requests else float("nan")


def cpu_time() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Window:
    """Counts requests; knows whether the measured window is open (once armed)."""

    def __init__(self) -> None:
        self.start = self.end = float("inf")
        self.requests = 0
        self.errors = 0
        self.cpu_start = 0.0
        self.cpu_end = 0.0
        self.measuring = False

    def arm(self, warmup: float, seconds: float) -> None:
        """Measure from ``warmup`` seconds from now, for ``seconds``."""
        self.start = time.perf_counter() + warmup
        self.end = self.start + seconds

    def tick(self, ok: bool) -> bool:
        """Count one request; ``False`` once the window has closed (stop sending)."""
        now = time.perf_counter()
        if now >= self.end:
            if self.measuring:
                self.measuring = False
                self.cpu_end = cpu_time()
            return False
        if now >= self.start:
            if not self.measuring and self.cpu_start == 0.0:
                self.measuring = True
                self.cpu_start = cpu_time()
            if self.measuring:
                self.requests += 1
                self.errors += not ok
        return True


async def run_loops(window: Window, connections: int, one: Callable[[], Awaitable[bool]]) -> None:
    """``connections`` coroutines, each calling ``one`` back-to-back until the window closes."""

    async def loop() -> None:
        ok = True
        while window.tick(ok):
            ok = await one()

    await asyncio.gather(*(loop() for _ in range(connections)))


async def run_callback_sessions(window: Window, sessions: list[Any]) -> None:
    """Drive protobench ``CallbackSession``s as the engine does: resubmit from ``done``."""
    latencies: array[int] = array("q")
    finished = asyncio.get_running_loop().create_future()
    running = [len(sessions)]

    def start(session: Any) -> None:
        sent = time.perf_counter_ns()

        def done(error: OpError | None, nbytes: int) -> None:
            latencies.append(time.perf_counter_ns() - sent)
            if window.tick(error is None):
                start(session)
            else:
                running[0] -= 1
                if running[0] == 0 and not finished.done():
                    finished.set_result(None)

        session.submit(done)

    for session in sessions:
        start(session)
    await finished


# -- the clients (each runs in its own child process) ---------------------------


async def haystack_protobench(
    args: argparse.Namespace, window: Window, validation: Literal["meta", "decode"]
) -> None:
    plugin = HaystackProtocol()
    options = HaystackOptions(validation=validation, auth_per="worker")
    params = ReadParams(filters=[args.filter])
    sessions = [
        await plugin.open_session(
            SessionContext(args.url, "read", "read", i, 0, params, options, 10.0)
        )
        for i in range(args.connections)
    ]
    window.arm(1.0, args.seconds)
    await run_callback_sessions(window, sessions)
    for session in sessions:
        await session.close()


async def haystack_hs_py(args: argparse.Namespace, window: Window) -> None:

    connector = aiohttp.TCPConnector(limit=args.connections)
    async with hs_py.Client(args.url, DEV_USER, DEV_PASSWORD, connector=connector) as client:

        async def one() -> bool:
            try:
                await client.read(args.filter, raw=True)
            except hs_py.HaystackError:
                return False
            return True

        window.arm(1.0, args.seconds)
        await run_loops(window, args.connections, one)


async def haystack_httpx(args: argparse.Namespace, window: Window) -> None:

    endpoint = parse_url(args.url)
    conn = await HttpConnection.connect(endpoint, ssl=None, timeout=10)
    token, _ = await login(conn, endpoint, DEV_USER, DEV_PASSWORD)
    conn.close()
    body = json.dumps(
        {
            "_kind": "grid",
            "meta": {},
            "cols": [{"name": "filter"}],
            "rows": [{"filter": args.filter}],
        }
    ).encode()
    headers = {
        "Authorization": bearer(token),
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    limits = httpx.Limits(max_connections=args.connections)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:

        async def one() -> bool:
            reply = await client.post(f"{args.url}/read", content=body, headers=headers)
            return reply.status_code == 200 and "err" not in reply.json()["meta"]

        window.arm(1.0, args.seconds)
        await run_loops(window, args.connections, one)


def _beckn_signed_body(args: argparse.Namespace) -> Callable[[], tuple[bytes, dict[str, str]]]:
    """Body + headers as protobench builds them (same factory, same signer)."""

    bodies = BodyFactory(
        "discover",
        bap_id=DEV_SUBSCRIBER_ID,
        bap_uri="http://127.0.0.1/bap",
        bpp_id="bpp.protobench.local",
        bpp_uri=args.url,
        queries=["pizza", "coffee"],
    )
    signer = Signer(DEV_SUBSCRIBER_ID, DEV_KEY_ID, private_key(DEV_PRIVATE_KEY))

    def make() -> tuple[bytes, dict[str, str]]:
        body = bodies()
        return body, {
            "Content-Type": "application/json",
            "Authorization": signer.authorization(body),
        }

    return make


async def beckn_protobench(args: argparse.Namespace, window: Window) -> None:

    plugin = BecknProtocol()
    params = DiscoverParams(queries=["pizza", "coffee"])
    sessions = [
        await plugin.open_session(
            SessionContext(args.url, "discover", "discover", i, 0, params, BecknOptions(), 10.0)
        )
        for i in range(args.connections)
    ]
    window.arm(1.0, args.seconds)
    await run_callback_sessions(window, sessions)
    for session in sessions:
        await session.close()


async def beckn_httpx(args: argparse.Namespace, window: Window) -> None:

    make = _beckn_signed_body(args)
    limits = httpx.Limits(max_connections=args.connections)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:

        async def one() -> bool:
            body, headers = make()
            reply = await client.post(f"{args.url}/discover", content=body, headers=headers)
            return reply.status_code == 200 and reply.json().get("status") == "ACK"

        window.arm(1.0, args.seconds)
        await run_loops(window, args.connections, one)


async def beckn_aiohttp(args: argparse.Namespace, window: Window) -> None:

    make = _beckn_signed_body(args)
    connector = aiohttp.TCPConnector(limit=args.connections)
    async with aiohttp.ClientSession(connector=connector) as client:

        async def one() -> bool:
            body, headers = make()
            async with client.post(f"{args.url}/discover", data=body, headers=headers) as reply:
                payload = await reply.json()
                return reply.status == 200 and payload.get("status") == "ACK"

        window.arm(1.0, args.seconds)
        await run_loops(window, args.connections, one)


def child(args: argparse.Namespace) -> None:
    """Run one client and print its :class:`Result` as JSON."""

    os.sched_setaffinity(0, {args.client_core})
    window = Window()
    runners: dict[tuple[str, str], Callable[[], Coroutine[Any, Any, None]]] = {
        ("haystack-read", "protobench"): lambda: haystack_protobench(args, window, "meta"),
        ("haystack-read", "protobench-decode"): lambda: haystack_protobench(args, window, "decode"),
        ("haystack-read", "hs_py.Client"): lambda: haystack_hs_py(args, window),
        ("haystack-read", "httpx"): lambda: haystack_httpx(args, window),
        ("beckn-discover", "protobench"): lambda: beckn_protobench(args, window),
        ("beckn-discover", "httpx"): lambda: beckn_httpx(args, window),
        ("beckn-discover", "aiohttp"): lambda: beckn_aiohttp(args, window),
    }
    uvloop.run(runners[(args.scenario, args.client)]())
    if window.cpu_end == 0.0:
        window.cpu_end = cpu_time()
    result = Result(
        args.scenario,
        args.client,
        window.requests,
        window.errors,
        args.seconds,
        window.cpu_end - window.cpu_start,
    )
    print(json.dumps(asdict(result)))


# -- the parent: targets, rounds, table -----------------------------------------


def start_target(name: str, core: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [str(PYTHON), "-m", "protobench", "serve", name, "--port", "0", "--announce"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    os.sched_setaffinity(process.pid, {core})
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise SystemExit(f"target {name} did not start")
    return process, str(json.loads(line)["url"])


def run_child(args: argparse.Namespace, scenario: str, client: str, url: str) -> Result:
    command = [
        str(PYTHON), __file__, "--child", "--scenario", scenario, "--client", client,
        "--url", url, "--seconds", str(args.seconds), "--connections", str(args.connections),
        "--filter", args.filter, "--client-core", str(args.client_core),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{scenario}/{client} failed:\n{done.stderr[-2000:]}")
    return Result(**json.loads(done.stdout.strip().splitlines()[-1]))


def signing_costs() -> dict[str, float]:
    """µs per call of the Beckn per-request crypto and body building, in this process."""

    bodies = BodyFactory(
        "discover", bap_id="b", bap_uri="http://127.0.0.1/bap", bpp_id="p", bpp_uri="x",
        queries=["pizza"],
    )  # fmt: skip
    body = bodies()
    signer = Signer(DEV_SUBSCRIBER_ID, DEV_KEY_ID, private_key(DEV_PRIVATE_KEY))
    header = signer.authorization(body)
    keys = {(DEV_SUBSCRIBER_ID, DEV_KEY_ID): public_key(DEV_PUBLIC_KEY)}

    def per_call(fn: Callable[[], object], number: int) -> float:
        return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6

    return {
        "body_bytes": float(len(body)),
        "build_body_us": per_call(bodies, 20_000),
        "digest_us": per_call(lambda: body_digest(body), 20_000),
        "sign_us": per_call(lambda: signer.authorization(body), 5_000),
        "verify_us": per_call(lambda: verify(header, body, keys), 2_000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--filter", default="site", help="Haystack read filter")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), action="append")
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--client-core", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.scenario = args.scenario[0]
        child(args)
        return
    results: list[Result] = []
    for scenario in args.scenario or list(SCENARIOS):
        process, url = start_target(TARGETS[scenario], args.server_core)
        try:
            for round_number in range(args.rounds):
                for client in SCENARIOS[scenario]:
                    result = run_child(args, scenario, client, url)
                    results.append(result)
                    print(
                        f"[{scenario} round {round_number + 1}] {client:18} "
                        f"{result.rps:9.0f} req/s {result.cpu_us:9.1f} µs CPU/req "
                        f"errors {result.errors}",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            process.terminate()
            process.wait(timeout=30)
    costs = signing_costs()
    if args.json:
        print(json.dumps({"results": [asdict(r) for r in results], "signing": costs}, indent=2))
        return
    print_table(results, args, costs)
    print(
        "\nBeckn per-request crypto (this process, best of 5): "
        f"body build {costs['build_body_us']:.1f} µs, BLAKE2b-512 digest "
        f"{costs['digest_us']:.1f} µs, digest + Ed25519 sign + header {costs['sign_us']:.1f} µs, "
        f"BPP verify {costs['verify_us']:.1f} µs ({costs['body_bytes']:.0f}-byte discover body)"
    )


def print_table(results: list[Result], args: argparse.Namespace, costs: dict[str, float]) -> None:
    """Medians per client; for Beckn also the CPU without the (identical) body + signing cost."""
    crypto = costs["build_body_us"] + costs["sign_us"]
    print(
        f"\n{args.connections} connections, {args.seconds:g} s per client, "
        f"median of {args.rounds} rounds, Haystack filter {args.filter!r}\n"
    )
    print(
        f"{'scenario':15} {'client':18} {'req/s':>8} {'µs CPU/req':>11} {'vs protobench':>14}"
        f" {'excl. signing':>14}"
    )
    for scenario, clients in SCENARIOS.items():
        rows = [r for r in results if r.scenario == scenario]
        if not rows:
            continue
        medians = {
            client: (
                statistics.median(r.rps for r in rows if r.client == client),
                statistics.median(r.cpu_us for r in rows if r.client == client),
            )
            for client in clients
        }
        base = medians["protobench"][1]
        for client, (rps, cpu_us) in medians.items():
            excluded = f"{cpu_us - crypto:14.1f}" if scenario == "beckn-discover" else ""
            print(
                f"{scenario:15} {client:18} {rps:8.0f} {cpu_us:11.1f} {cpu_us / base:13.1f}x"
                f" {excluded}"
            )
        met = all(base <= medians[peer][1] / 5 for peer in PEERS[scenario])
        print(
            f"{'':15} goal (<= 1/5 of {', '.join(PEERS[scenario])}): {'met' if met else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
