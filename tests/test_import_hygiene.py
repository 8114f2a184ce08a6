"""The headless packages never import Textual or Rich (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import protobench

HEADLESS = ("engine", "protocols", "profiles", "snapshots", "targets", "vocab")


def _modules(package: str) -> list[str]:
    path = [f"{protobench.__path__[0]}/{package}"]
    names = [f"protobench.{package}"]
    for info in pkgutil.walk_packages(path, prefix=f"protobench.{package}."):
        names.append(info.name)
    return names


@pytest.mark.parametrize("package", HEADLESS)
def test_headless_package_imports_without_ui_libraries(package: str) -> None:
    modules = _modules(package)
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "ui = ('textual', 'rich')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ui)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"{package} pulled in UI modules"
