"""The sample outputs shown in the docs are what protobench prints (issue 29).

A sample is a fenced block right after ``<!-- sample: NAME ... -->`` in a page. Each
is checked against the output protobench produces now: after the figures, ids, paths
and hashes are made placeholders (:func:`shape`), every line of the sample must be a
line of the real output, in the same order (the output may have more: a verdict that
only a busy host gets). A sample that loses or gains a column, or names a unit or a
line the output no longer has, fails here. The report's JSON sample has only keys
of the report's schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from protobench.cli.diff_text import render_text
from protobench.cli.sweep_cmd import render_table
from protobench.engine.sweep import Axis, Point, SweepResult
from protobench.snapshots.diff import compare, parse_gate
from protobench.snapshots.schemas import json_schema
from tests.support.cli import run_cli
from tests.support.snapshots import OpSpec, typed_snapshot
from tests.support.targets import served

pytestmark = pytest.mark.integration  # a whole run

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARK = re.compile(
    r"<!-- sample: (?P<name>[\w-]+)[^>]*-->\n```[^\n]*\n(?P<body>.*?)\n```", re.DOTALL
)

_SHAPES = (
    (re.compile(r"\b\d{8}-\d{6}-[\w.-]+?-[0-9a-f]{4}\b"), "ID"),  # a run id
    (re.compile(r"sweep-\d{8}-\d{6}-[0-9a-f]{4}"), "SWEEP"),
    (re.compile(r"\b[0-9a-f]{12}\b"), "HASH"),
    (re.compile(r"(?<![\w.])/[^\s]*"), "PATH"),
    (re.compile(r"https?://[^\s]+"), "URL"),
    (re.compile(r"[+-]?\d[\d,]*(\.\d+)?(µs|ms|s|%|MiB|KiB|k/s|/s|pp)?(?![\w])"), "#"),
)


def shape(line: str) -> str:
    """A line with its figures, ids, paths, URLs and hashes made placeholders, spaces single."""
    for pattern, placeholder in _SHAPES:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def samples() -> dict[str, str]:
    """Every marked sample of the docs, by name."""
    found: dict[str, str] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for match in MARK.finditer(page.read_text(encoding="utf-8")):
            assert match["name"] not in found, f"two samples named {match['name']}"
            found[match["name"]] = match["body"]
    return found


def assert_shows(sample: str, output: str) -> None:
    """Every line of ``sample`` is a line of ``output`` (in shape), in order.

    ``...`` in a sample's line stands for whatever the output has there.
    """
    real = [shape(line) for line in output.splitlines() if line.strip()]
    position = 0
    for line in (shape(line) for line in sample.splitlines() if line.strip()):
        pattern = re.compile(".*".join(re.escape(part) for part in line.split("...")))
        found = next((i for i in range(position, len(real)) if pattern.fullmatch(real[i])), None)
        assert found is not None, f"the docs show {line!r}; the output has {real[position:]}"
        position = found + 1


def run_summary(tmp_path: Path) -> str:
    # 2 s: the sustain phase holds a resource sample (its host line) however late it comes
    args = ["run", "http-get", "--no-tui", "-d", "2s", "--warmup", "0s", "-c", "4", "-p", "1"]
    done = run_cli(args, tmp_path, env={"PROTOBENCH_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def url_run(tmp_path: Path) -> str:
    with served("http") as target:
        args = ["run", f"{target.url}api", "-m", "POST", "-T", "application/json"]
        args += ["--data", '{"id": 1}', "-H", "X-Test: one", "-a", "demo:pw", "-n", "2000"]
        args += ["-c", "4", "-p", "1", "--no-tui"]
        done = run_cli(args, tmp_path, env={"PROTOBENCH_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def url_errors(tmp_path: Path) -> str:
    lines = []
    for args in (
        ["mqtt://127.0.0.1:1883/"],
        ["http://127.0.0.1:8080/", "-H", "X-Test"],
        ["http://127.0.0.1:8080/", "-D", "order.json"],
        ["http://127.0.0.1:8080/", "-d", '{"id": 1}'],
    ):
        done = run_cli(["run", *args, "--no-tui"], tmp_path, timeout=60)
        assert done.returncode == 2
        lines.append(done.stderr.strip())
    return "\n".join(lines)


def profile_errors(tmp_path: Path) -> str:
    lines = []
    good = (
        'name = "mine"\nprotocol = "http"\nwarmup = "1s"\nduration = "{duration}"\n'
        'target = "http://127.0.0.1:9/"\n\n[options]\ninsecure = false\n\n'
        '[[group]]\n{count} = 50\nop = "request"\n'
    )
    for duration, count in (("1s", "cuont"), ("2 sec", "count")):
        (tmp_path / "mine.toml").write_text(good.format(duration=duration, count=count))
        done = run_cli(["run", "mine.toml", "--no-tui"], tmp_path, timeout=60)
        assert done.returncode == 2
        lines.append(done.stderr.strip())
    return "\n".join(lines)


def diff(tmp_path: Path) -> str:
    base = typed_snapshot({"get": OpSpec(median_us=1800.0)}, seed=1, profile_sha256="b" * 64)
    new = typed_snapshot({"get": OpSpec(median_us=6000.0)}, seed=2)
    result = compare([base], [new], metrics=("p50", "throughput"), gates=[parse_gate("p50:+10%")])
    return render_text(result)


def sweep(tmp_path: Path) -> str:
    levels = (1, 4, 16, 64)
    axis = Axis("connections", levels, tuple(str(level) for level in levels))
    points = [
        Point(
            assignment={"connections": level},
            throughput=20_000.0 + 1_000.0 * index,
            p50=22.0 * (index + 1),
            p99=121.0 * (index + 1),
            error_rate=0.0,
            generator_cpu=28.0,
            target_cpu=25.0,
            generator_bound=False,
            partial=False,
            snapshot=f"/store/20261122-01412{index}-http-get-f16{index}.json.gz",
        )
        for index, level in enumerate(levels)
    ]
    result = SweepResult("sweep-20261122-014122-1e76", [axis], points, knees=[1])
    return render_table(result)


def discover_bacnet(tmp_path: Path) -> str:
    from bac_py.types.enums import ObjectType as Type  # noqa: PLC0415 - the bacnet extra
    from bac_py.types.primitives import ObjectIdentifier  # noqa: PLC0415

    from protobench.protocols.bacnet_ip.address import TargetAddress  # noqa: PLC0415
    from protobench.protocols.bacnet_ip.discover import DeviceInfo, ObjectInfo  # noqa: PLC0415
    from protobench.protocols.bacnet_ip.fit import summary  # noqa: PLC0415

    kinds = [  # the BACpypes3 device of the integration tests: type, count, datatype, commanded
        (Type.NETWORK_PORT, 1, None, False),
        (Type.ANALOG_INPUT, 400, "real", False),
        (Type.ANALOG_VALUE, 5, "real", True),
        (Type.BINARY_VALUE, 3, "enumerated", True),
        (Type.MULTI_STATE_VALUE, 2, "unsigned", False),
        (Type.NOTIFICATION_CLASS, 1, None, False),
    ]
    objects = [
        ObjectInfo(ObjectIdentifier(kind, i), f"{kind.name}-{i}", datatype, 1, commanded)
        for kind, count, datatype, commanded in kinds
        for i in range(1, count + 1)
    ]
    device = DeviceInfo(
        TargetAddress("127.0.0.1", 47997, device=1234),
        True,
        "bacpypes3-1234",
        "BACpypes",
        "N/A",
        1024,
        "both",
        True,
        objects,
        [ObjectIdentifier(Type.DEVICE, 1234), *(o.oid for o in objects)],
        cov_object=ObjectIdentifier(Type.ANALOG_INPUT, 1),
    )
    return summary(device)


def discover_haystack(tmp_path: Path) -> str:
    from protobench.protocols.haystack.discover import Entity, ServerInfo  # noqa: PLC0415
    from protobench.protocols.haystack.fit import summary  # noqa: PLC0415

    ops = "about ops formats read nav hisRead hisWrite pointWrite watchSub watchUnsub watchPoll"
    vavs = [Entity(f"s1.vav{i}", f"Denver Campus 1 VAV-00{i}") for i in range(5, 10)]
    points = [Entity("s1.ahu1.dap", "Denver Campus 1 AHU-1 Discharge Air Pressure")]
    points += [Entity(f"s1.ahu1.p{i}", f"Denver Campus 1 AHU-1 Point {i}") for i in range(4)]
    info = ServerInfo(
        "http://127.0.0.1:8080/api",
        "admin",
        {"productName": "hs-py", "productVersion": "0.3.0", "haystackVersion": "4.0"},
        ops.split(),
        [
            ("application/json", True, True),
            ("text/zinc", True, True),
            ("text/trio", True, True),
            ("text/csv", False, True),
        ],
        {"sites": [Entity("s1", "Denver Campus 1")], "equips": vavs, "points": points},
    )
    return summary(info)


PRODUCERS: dict[str, Callable[[Path], str]] = {
    "discover-bacnet": discover_bacnet,
    "discover-haystack": discover_haystack,
    "run-summary": run_summary,
    "url-run": url_run,
    "url-errors": url_errors,
    "profile-errors": profile_errors,
    "diff": diff,
    "sweep": sweep,
}


def test_every_sample_has_a_producer() -> None:
    assert set(samples()) == set(PRODUCERS)


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_the_sample_is_what_protobench_prints(name: str, tmp_path: Path) -> None:
    assert_shows(samples()[name], PRODUCERS[name](tmp_path))


def test_a_stale_sample_fails() -> None:
    stale = samples()["run-summary"].replace("KiB/connection", "KiB/session")
    current = samples()["run-summary"]
    with pytest.raises(AssertionError, match="KiB/session"):
        assert_shows(stale, current)
    header = next(line for line in current.splitlines() if line.startswith("op "))
    with pytest.raises(AssertionError):
        assert_shows(header.replace("p95", ""), current)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` followed and, of an ``anyOf``, the object it allows."""
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rpartition("/")[2]]
    for option in schema.get("anyOf", []):
        resolved = _resolve(option, root)
        if resolved.get("type") == "object":
            return resolved
    return schema


def _keys_in_schema(value: Any, schema: dict[str, Any], root: dict[str, Any], at: str) -> None:
    schema = _resolve(schema, root)
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            assert key in schema["properties"], f"{at}.{key}: not in the report's schema"
            _keys_in_schema(item, schema["properties"][key], root, f"{at}.{key}")
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            _keys_in_schema(item, schema["additionalProperties"], root, f"{at}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _keys_in_schema(item, schema["items"], root, f"{at}.{index}")


def test_the_report_sample_has_the_keys_of_the_report_schema() -> None:
    page = (DOCS / "outputs" / "report.md").read_text(encoding="utf-8")
    block = page.split("```jsonc\n", 1)[1].split("```", 1)[0]
    text = re.sub(r"(?m)(?<=[\s,{\[])//.*$", "", block).replace("{...}", "{}")
    sample = json.loads(text)
    schema = json_schema("report")
    _keys_in_schema(sample, schema, schema, "report")
    assert set(schema["required"]) <= set(sample)
