"""Without an optional extra: one line naming the pip command, exit 2; the core still runs.

The real ``python -m protobench`` runs with a ``sitecustomize`` that puts a
blocker first on ``sys.meta_path``: the extra's library cannot be imported, as
in an install without it (worker subprocesses inherit the blocker).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from protobench.cli import boundary
from protobench.protocols.registry import PluginError, missing_extra, needs, require

pytestmark = pytest.mark.integration

BLOCKER = """
import os, sys
from importlib.abc import MetaPathFinder

BLOCKED = set(os.environ["PROTOBENCH_TEST_BLOCK"].split(","))


class Blocker(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
"""


def protobench(
    tmp_path: Path, blocked: str, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "PROTOBENCH_TEST_BLOCK": blocked,
        "PROTOBENCH_HOME": str(tmp_path / "home"),
    }
    return subprocess.run(
        [sys.executable, "-m", "protobench", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "bacnet-ip"], "the bacnet-ip protocol needs `pip install 'protobench[bacnet]'`"),
        (["run", "bacnet-sc"], "the bacnet-sc protocol needs `pip install 'protobench[bacnet]'`"),
        (
            ["run", "haystack-http"],
            "the haystack protocol needs `pip install 'protobench[haystack]'`",
        ),
        (
            ["serve", "bacnet-ip"],
            "the bacnet-ip embedded target needs `pip install 'protobench[bacnet]'`",
        ),
        (
            ["serve", "haystack"],
            "the haystack embedded target needs `pip install 'protobench[haystack]'`",
        ),
        (
            ["discover", "bacnet://127.0.0.1:47808/"],
            "the bacnet-ip protocol needs `pip install 'protobench[bacnet]'`",
        ),
    ],
)
def test_a_missing_extra_is_one_line_exit_2(tmp_path: Path, args: list[str], line: str) -> None:
    done = protobench(tmp_path, "bac_py,hs_py,uvicorn,fastapi", *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("protobench: error: ")
    assert done.stderr.rstrip().endswith(line)
    assert "Traceback" not in done.stderr


def test_the_core_runs_without_the_bacnet_and_haystack_extras(tmp_path: Path) -> None:
    args = ["run", "http-get", "-d", "1s", "--warmup", "0s", "-p", "1", "-c", "2", "--json"]
    done = protobench(tmp_path, "bac_py,hs_py,uvicorn,fastapi,ray", *args, timeout=90)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["phases"]["sustain"]["total"]["ok"] > 0
    assert (tmp_path / "home" / "snapshots").is_dir()


def test_missing_extra_names_the_extra_of_a_module() -> None:
    assert missing_extra(ModuleNotFoundError("x", name="bac_py.app")) == "bacnet"
    assert missing_extra(ModuleNotFoundError("x", name="hs_py")) == "haystack"
    assert missing_extra(ModuleNotFoundError("x", name="numpy")) is None
    assert missing_extra(ValueError("bac_py")) is None
    assert needs("ray", "--ray") == "--ray needs `pip install 'protobench[ray]'`"


def test_require_turns_only_an_extras_import_error_into_a_plugin_error() -> None:
    needed = r"the x protocol needs .*protobench\[bacnet\]"
    with pytest.raises(PluginError, match=needed), require("x", "protocol"):
        raise ModuleNotFoundError("no bac_py", name="bac_py")
    with pytest.raises(ModuleNotFoundError), require("x", "protocol"):
        raise ModuleNotFoundError("no numpy", name="numpy")


def test_the_boundary_names_the_extra_of_any_missing_module(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = boundary.exit_code_of(ModuleNotFoundError("No module named 'ray'", name="ray"))
    assert code == 2
    assert capsys.readouterr().err == (
        "protobench: error: this command needs `pip install 'protobench[ray]'`\n"
    )
