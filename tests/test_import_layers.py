"""The dependency rule: the import-linter contracts in pyproject.toml hold, and they bite.

Layers, top to bottom: cli, tui, htmlreport, snapshots, engine, profiles, targets,
protocols, then the vocabulary (``protobench.vocab``) beside the leaf modules; an
import may only point down. Nothing but the CLI imports the TUI, and the engine
never imports snapshots, the TUI or the HTML report. No two modules import each
other, directly or in a loop (nor two packages of one parent), wherever the import
is (module top, function body, ``TYPE_CHECKING``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(source: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts, on the package found under ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_imports_point_down_the_layers() -> None:
    done = lint_imports(ROOT / "src", ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package under ``tmp_path`` whose ``module`` (a path) ends with ``line``."""
    shutil.copytree(
        ROOT / "src" / "protobench",
        tmp_path / "protobench",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    path = tmp_path / "protobench" / module
    path.write_text(path.read_text() + f"\n{line}\n")
    return tmp_path


def test_an_arrow_up_breaks_the_contract(tmp_path: Path) -> None:
    """The check itself: the vocabulary importing the engine is reported."""
    _copy_with(tmp_path, "vocab/units.py", "import protobench.engine.bounds")
    done = lint_imports(tmp_path, tmp_path)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "protobench.vocab.units -> protobench.engine.bounds" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "package"),
    [
        # two modules importing each other (the store imports the model), in a function
        (
            "snapshots/model.py",
            "def _f() -> None:\n    import protobench.snapshots.store",
            "protobench.snapshots",
        ),
        # a loop of three: archive -> report_model -> summaries -> archive
        ("engine/summaries.py", "import protobench.engine.archive", "protobench.engine"),
    ],
)
def test_an_import_cycle_breaks_the_contract(
    tmp_path: Path, module: str, line: str, package: str
) -> None:
    _copy_with(tmp_path, module, line)
    done = lint_imports(tmp_path, tmp_path)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "No two modules import each other, directly or in a loop BROKEN" in done.stdout
    assert f"No cycles are allowed in {package}." in done.stdout
    assert "Imports point down the layers KEPT" in done.stdout
