"""Bad input and a target that cannot start, through the real ``python -m protobench``.

Exit 2 (or 3 for a target that does not start) with one line on stderr, never a
traceback, and nothing started for bad input.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

RUN = (sys.executable, "-m", "protobench", "run", "--no-tui", "--quiet")


def protobench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


EVERY_ZERO = """\
name = "zero"
protocol = "http"

[[group]]
op = "request"
every = "0s"
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("zero.toml",), "zero.toml:6: group[0].every: expected a period > 0"),
        (("http-get", "--duration", "nan"), "--duration: expected a duration"),
        (("http-get", "--interval", "0s"), "--interval: expected an interval between"),
        (("http-get", "--connections", "10000000"), "--connections: "),
        (("http-get", "--target-pid", "-1"), "--target-pid"),
        (("http-get", "--serve-opt", "delay=abc"), "--serve-opt: delay: expected a duration"),
    ],
)
def test_bad_input_exits_2_on_one_line(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    (tmp_path / "zero.toml").write_text(EVERY_ZERO)
    done = protobench(tmp_path, *RUN[:4], args[0], *RUN[4:], *args[1:])
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("protobench: error: ")
    assert expected in done.stderr
    assert not (tmp_path / ".protobench").exists()


def test_serve_port_out_of_range_exits_2(tmp_path: Path) -> None:
    done = protobench(
        tmp_path, sys.executable, "-m", "protobench", "serve", "http", "--port", "70000"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1


def test_target_that_fails_to_start_exits_3_on_one_line(tmp_path: Path) -> None:
    done = protobench(
        tmp_path, *RUN[:4], "mqtt-qos1", *RUN[4:], "--warmup", "0s", "--duration", "1s",
        "--serve-opt", "password_file=/nonexistent",
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("protobench: error: embedded target 'mqtt' did not start")
    assert done.stderr.count("\n") == 1, done.stderr
