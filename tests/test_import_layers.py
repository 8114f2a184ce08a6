"""The dependency rule: the import-linter contracts in pyproject.toml hold, and they bite.

Layers, top to bottom: cli, tui, htmlreport, snapshots, engine, profiles, targets,
protocols, then the vocabulary (``protobench.vocab``) beside the leaf modules; an
import may only point down. Nothing but the CLI imports the TUI, and the engine
never imports snapshots, the TUI or the HTML report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


def test_an_arrow_up_breaks_the_contract(tmp_path: Path) -> None:
    """The check itself: the vocabulary importing the engine is reported."""
    shutil.copytree(
        ROOT / "src" / "protobench",
        tmp_path / "protobench",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    units = tmp_path / "protobench" / "vocab" / "units.py"
    units.write_text(units.read_text() + "\nimport protobench.engine.bounds\n")
    done = lint_imports(tmp_path, tmp_path)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "protobench.vocab.units -> protobench.engine.bounds" in done.stdout
