"""``protobench discover`` against BACpypes3 and bac-py devices: the summary, and a fitted
profile that loads and runs without errors (short runs, bounded by subprocess timeouts)."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protobench.protocols.bacnet_ip.discover import discover
from protobench.protocols.bacnet_ip.fit import summary
from protobench.protocols.bacnet_ip.options import BacnetIpOptions
from protobench.targets.bacnet import BacnetIpTarget
from tests.support.bacnet import bacpypes3_device, color_device, served
from tests.support.cli import CliResult

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("forget_learned_instances")]

RUN = ("--warmup", "1s", "--duration", "2s", "--json", "--quiet")


def run_fitted(cli: Callable[..., CliResult], url: str, path: Path) -> dict[str, Any]:
    found = cli("discover", url, "--write-profile", str(path), timeout=60)
    assert found.returncode == 0, found.stderr
    assert f"profile written to {path}" in found.stdout
    result = cli("run", str(path), *RUN, timeout=120)
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = result.json()
    return report


def test_discover_a_bacpypes3_device_and_run_its_profile(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Its Timer comes first and refuses COV: the subscription goes to an object that took it."""
    with bacpypes3_device("--analog-inputs", "40", "--timer") as (endpoint, _):
        path = tmp_path / "fitted.toml"
        report = run_fitted(cli, f"bacnet://{endpoint}/", path)
    profile = tomllib.loads(path.read_text())
    cov = next(g for g in profile["group"] if g["op"] == "cov")
    assert cov["objects"] == ["analog-input:1"]
    assert "timer:1" in next(g for g in profile["group"] if g["op"] == "read-property")["objects"]
    assert profile["target"] == f"bacnet://{endpoint}/?device=1234"
    writes = {g["name"]: g for g in profile["group"] if g["op"] == "write-property"}
    assert set(writes) == {"write-analog-value", "write-binary-value"}
    assert writes["write-analog-value"]["objects"] == ["analog-value:1-5"]
    assert writes["write-analog-value"]["datatype"] == "real"
    assert writes["write-binary-value"]["values"] == [0, 1]
    reads = next(g for g in profile["group"] if g["op"] == "read-property")
    assert "analog-input:1-40" in reads["objects"]
    sustain = report["phases"]["sustain"]
    assert sustain["ops"]["read-property"]["ok"] > 10
    assert sustain["ops"]["write-analog-value"]["ok"] > 10
    assert sustain["total"]["errors"] == 0
    covs = [report["phases"][phase]["ops"]["cov"] for phase in ("warmup", "sustain")]
    assert sum(c["ok"] for c in covs) == 1, "subscribed once (renewed after 60 s)"
    assert sum(c["errors"] for c in covs) == 0


def test_discover_our_own_target_and_run_its_profile(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    async def serve_and_run() -> dict[str, Any]:
        async with served(BacnetIpTarget()) as announced:
            return await asyncio.to_thread(
                run_fitted, cli, announced.url.split("?")[0], tmp_path / "own.toml"
            )

    report = asyncio.run(serve_and_run())
    text = (tmp_path / "own.toml").read_text()
    profile = tomllib.loads(text)
    ops = {g.get("name", g["op"]) for g in profile["group"]}
    assert {"read-property", "read-property-multiple", "object-list", "cov"} <= ops
    assert "write-analog-value" in ops
    assert "write-analog-input" not in ops
    assert report["phases"]["sustain"]["total"]["errors"] == 0


def test_discover_a_device_with_types_bac_py_does_not_name_and_run_its_profile(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    async def serve_and_run() -> dict[str, Any]:
        async with color_device() as url:
            return await asyncio.to_thread(run_fitted, cli, url, tmp_path / "colors.toml")

    report = asyncio.run(serve_and_run())
    text = (tmp_path / "colors.toml").read_text()
    assert "vendor" not in text
    groups = {g.get("name", g["op"]): g for g in tomllib.loads(text)["group"]}
    assert groups["read-property"]["objects"] == ["63:1-2", "64:1", "analog-input:1"]
    assert (groups["write-64"]["objects"], groups["write-64"]["values"]) == (["64:1"], [2700, 2701])
    assert groups["cov"]["objects"] == ["63:1"]
    sustain = report["phases"]["sustain"]
    assert sustain["ops"]["write-64"]["ok"] > 10
    assert sustain["ops"]["read-property-multiple"]["ok"] > 10
    assert sustain["total"]["errors"] == 0


def test_discover_a_bacnet_ipv6_device_and_run_its_profile(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    async def serve_and_run() -> dict[str, Any]:
        async with served(BacnetIpTarget(), ipv6=True, drift=True) as announced:
            assert announced.url.startswith("bacnet://[::1]:")
            return await asyncio.to_thread(
                run_fitted, cli, announced.url.split("?")[0], tmp_path / "ipv6.toml"
            )

    report = asyncio.run(serve_and_run())
    profile = tomllib.loads((tmp_path / "ipv6.toml").read_text())
    assert profile["target"].startswith("bacnet://[::1]:")
    assert profile["target"].endswith("/?device=400")
    ops = {g.get("name", g["op"]): g for g in profile["group"]}
    assert ops["cov"]["objects"] == ["analog-input:1"]
    sustain = report["phases"]["sustain"]
    assert sustain["total"]["errors"] == 0
    assert sustain["ops"]["write-analog-value"]["ok"] > 10


def test_discover_summary_lists_types_datatypes_and_commandable() -> None:
    async def run() -> str:
        async with served(BacnetIpTarget()) as announced:
            info = await discover(announced.url, BacnetIpOptions(), 2.0)
        return summary(info)

    text = asyncio.run(run())
    assert "40 objects in the object-list" in text
    assert "analog-value" in text
    assert "commandable: analog-output:1-5, analog-value:1-5" in text


def test_discover_names_a_device_that_does_not_answer(
    cli: Callable[..., CliResult],
) -> None:
    result = cli("discover", "bacnet://127.0.0.1:9/", "--timeout", "0.5s", timeout=30)
    assert result.returncode == 3
    assert "object-list probe of device:4194303" in result.stderr
