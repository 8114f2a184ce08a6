"""The wheel and the sdist as PyPI would get them, and an installed wheel's data directory.

Both are built from this checkout with hatchling (no network: the build backend and
its README plugin are in the dev extra). The wheel carries the license; the sdist the
source, tests and docs, but no cache, build output or screenshot; the description is
the README up to its documentation links, with no link that would be broken on PyPI.
An installed wheel (not a source checkout) keeps its runs in the user's data
directory unless ``PROTOBENCH_HOME`` says otherwise, and the run's end says where.
"""

from __future__ import annotations

import email.parser
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.integration  # a whole run

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the sdist of this checkout, in a new directory."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def wheel_of(dist: Path) -> zipfile.ZipFile:
    (path,) = dist.glob("protobench-*.whl")
    return zipfile.ZipFile(path)


def sdist_names(dist: Path) -> list[str]:
    (path,) = dist.glob("protobench-*.tar.gz")
    with tarfile.open(path) as sdist:
        return [name.partition("/")[2] for name in sdist.getnames()]


def metadata(dist: Path) -> email.message.Message:
    text = wheel_of(dist).read(f"protobench-{VERSION}.dist-info/METADATA").decode()
    return email.parser.Parser().parsestr(text)


def test_the_wheel_carries_the_license_and_the_package(dist: Path) -> None:
    names = wheel_of(dist).namelist()
    license_file = f"protobench-{VERSION}.dist-info/licenses/LICENSE"
    assert license_file in names
    assert wheel_of(dist).read(license_file) == (ROOT / "LICENSE").read_bytes()
    assert "protobench/cli/__init__.py" in names
    # the HTML report's script and style, read as package data
    assert {"protobench/htmlreport/charts.js", "protobench/htmlreport/report.css"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "docs/")) or "__pycache__" in n]


def test_the_metadata_has_no_python_cap_no_urls_and_the_license(dist: Path) -> None:
    meta = metadata(dist)
    assert meta["Requires-Python"] == ">=3.13"
    assert meta["License-Expression"] == "MIT"
    assert meta["License-File"] == "LICENSE"
    assert meta.get_all("Project-URL") is None
    assert "Home-page" not in meta


def test_the_pypi_description_is_the_short_readme_without_a_broken_link(dist: Path) -> None:
    meta = metadata(dist)
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload()
    assert isinstance(description, str)
    assert description.startswith("# protobench\n")
    for persona in ("HTTP service", "MQTT broker", "BACnet device", "Haystack server"):
        assert persona in description
    relative = re.findall(r"\]\((?!https?://)[^)]*\)", description)
    assert relative == [], "links that do not work on PyPI"
    assert "make docs" in description
    assert len(description.splitlines()) < 120


def test_the_sdist_has_source_tests_and_docs_but_no_cache_or_screenshot(dist: Path) -> None:
    names = set(sdist_names(dist))
    for wanted in (
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        "pyproject.toml",
        "mkdocs.yml",
        "src/protobench/cli/__init__.py",
        "tests/test_packaging.py",
        "docs/index.md",
        "scripts/docs_reference.py",
        "bench/README.md",
    ):
        assert wanted in names, wanted
    unwanted = [
        n
        for n in names
        if n.endswith((".png", ".pyc"))
        or any(part in n.split("/") for part in (".hypothesis", "__pycache__", ".venv", "site"))
    ]
    assert unwanted == []


def test_an_installed_wheel_keeps_its_runs_in_the_users_data_directory(
    dist: Path, tmp_path: Path
) -> None:
    # The package from the wheel (not this checkout), its dependencies from this venv.
    installed = tmp_path / "site"
    wheel_of(dist).extractall(installed)
    cwd, data = tmp_path / "cwd", tmp_path / "xdg"
    cwd.mkdir()
    env = {"PYTHONPATH": str(installed), "XDG_DATA_HOME": str(data), "PROTOBENCH_HOME": ""}
    args = ["run", "http-get", "--no-tui", "-d", "0.5s", "--warmup", "0s", "-c", "2", "-p", "1"]
    done = run_cli(args, cwd, env=env)
    assert done.returncode == 0, done.stderr
    snapshots = list((data / "protobench" / "snapshots").glob("*.json.gz"))
    assert len(snapshots) == 1
    assert f"snapshot {snapshots[0]}" in done.stdout  # the end of the run says where it went
    assert not (cwd / ".protobench").exists()
    # PROTOBENCH_HOME still wins.
    home = tmp_path / "home"
    again = run_cli(args, cwd, env={**env, "PROTOBENCH_HOME": str(home)})
    assert again.returncode == 0, again.stderr
    assert len(list((home / "snapshots").glob("*.json.gz"))) == 1
