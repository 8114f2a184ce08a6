"""protobench's counts beside the device's own: whole runs through the CLI against bac-py's
BACnet/IPv6 device and its routers to BACnet/IPv6 and BACnet/SC, each request counted where
bac-py's server handles it (its ReadProperty and WriteProperty handlers, wrapped), and
against a BACpypes3 device on BACnet/IP, which counts the requests it handles itself.

Each run is three seconds long and bounded by a subprocess timeout.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from bac_py import DefaultServerHandlers
from bac_py.network.address import BACnetAddress
from bac_py.services.read_property import ReadPropertyRequest
from bac_py.services.write_property import WritePropertyRequest
from bac_py.types.enums import ObjectType
from bac_py.types.primitives import ObjectIdentifier

from protobench.targets.bacnet import BacnetIpTarget
from protobench.targets.bacnet_router import BacnetRouterTarget
from protobench.targets.base import EmbeddedTarget
from tests.cli.test_run_bacnet_ip import total
from tests.support.bacnet import bacpypes3_device, served
from tests.support.cli import CliResult

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("forget_learned_instances")]

PROFILE = """
name = "bacnet-counts"
protocol = "bacnet-ip"
target = "{url}"
[[group]]
op = "read-property"
count = 2
objects = ["analog-input:1"]
[[group]]
op = "write-property"
count = 1
objects = ["analog-value:1"]
values = [70.0, 71.0]
"""
RUN = ("--warmup", "1s", "--duration", "2s", "--timeout", "10s", "--json", "--quiet")
"""A short run; the generous op timeout lets a busy machine answer late: a late answer is
still an exchange both sides count (the test compares counts, not latencies)."""
Handler = Callable[[Any, int, bytes, BACnetAddress], Awaitable[bytes | None]]


def counting(
    handler: Handler,
    decode: Callable[[bytes], Any],
    seen: Counter[str],
    op: str,
    wanted: ObjectIdentifier,
) -> Handler:
    """``handler``, counting the requests that name ``wanted`` as ``seen[op]``."""

    async def wrapper(self: Any, choice: int, data: bytes, source: BACnetAddress) -> bytes | None:
        if decode(data).object_identifier == wanted:
            seen[op] += 1
        return await handler(self, choice, data, source)

    return wrapper


@pytest.mark.parametrize(
    ("target", "options"),
    [
        (BacnetIpTarget(), {"ipv6": True}),
        (BacnetRouterTarget(), {"to": "ipv6"}),
        (BacnetRouterTarget(), {"to": "sc"}),
    ],
    ids=["ipv6-device", "router-to-ipv6", "router-to-sc"],
)
def test_every_request_counted_is_one_the_device_handled(
    target: EmbeddedTarget,
    options: dict[str, Any],
    cli: Callable[..., CliResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: Counter[str] = Counter()
    for op, decode, wanted in (
        ("read-property", ReadPropertyRequest.decode, ObjectType.ANALOG_INPUT),
        ("write-property", WritePropertyRequest.decode, ObjectType.ANALOG_VALUE),
    ):
        method = "handle_" + op.replace("-", "_")
        handler = counting(
            getattr(DefaultServerHandlers, method), decode, seen, op, ObjectIdentifier(wanted, 1)
        )
        monkeypatch.setattr(DefaultServerHandlers, method, handler)
    profile = tmp_path / "counts.toml"

    async def serve_and_run() -> CliResult:
        async with served(target, **options) as announced:
            profile.write_text(PROFILE.format(url=announced.url))
            return await asyncio.to_thread(cli, "run", str(profile), *RUN)

    result = asyncio.run(serve_and_run())
    assert result.returncode == 0, result.stderr
    report = result.json()
    for op in ("read-property", "write-property"):
        sent = total(report, op, "ok") + total(report, op, "errors")
        assert sent > 20, (op, sent)
        assert seen[op] == sent, (op, seen[op], report["phases"])


def test_every_request_counted_is_one_the_bacpypes3_device_handled(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    counts, profile = tmp_path / "counts.txt", tmp_path / "counts.toml"
    with bacpypes3_device("--counts", str(counts)) as (endpoint, instance):
        profile.write_text(PROFILE.format(url=f"bacnet://{endpoint}/?device={instance}"))
        result = cli("run", str(profile), *RUN, timeout=120)
    assert result.returncode == 0, result.stderr
    report = result.json()
    lines = (line.split() for line in counts.read_text().splitlines())
    seen = {(op, oid): int(n) for op, oid, n in lines}
    for op, oid in (("read-property", "analog-input,1"), ("write-property", "analog-value,1")):
        sent = total(report, op, "ok") + total(report, op, "errors")
        assert sent > 20, (op, sent)
        assert seen.get((op, oid)) == sent, (op, seen, report["phases"])
