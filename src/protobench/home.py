"""Where protobench keeps its files: ``$PROTOBENCH_HOME``, else a per-user data directory.

The snapshot store (``<home>/snapshots``), the runs' worker and target logs
(``<home>/logs/<id>/``) and crash logs (``<home>/logs``) live under one
directory:

- ``$PROTOBENCH_HOME`` when it is set (and not empty);
- else, for a development install (the package imported from a source checkout,
  ``<root>/src/protobench`` with ``pyproject.toml`` and ``.git`` at the root, as
  ``make run`` and the tests use it), ``.protobench`` in the current directory;
- else (an installed wheel) ``protobench`` in the user's data directory:
  ``$XDG_DATA_HOME/protobench``, ``~/.local/share/protobench`` when
  ``XDG_DATA_HOME`` is unset or not an absolute path (the XDG Base Directory rule).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "PROTOBENCH_HOME"
CHECKOUT_HOME = Path(".protobench")
"""The home of a development install: in the current directory."""
_PACKAGE = Path(__file__).parent


def checkout_root(package: Path) -> Path | None:
    """The source checkout that holds ``package`` (``<root>/src/protobench``), or None."""
    package = package.resolve()
    root = package.parent.parent
    if package.parent.name != "src" or not (root / "pyproject.toml").is_file():
        return None
    return root if (root / ".git").exists() else None


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/protobench``, else ``~/.local/share/protobench``."""
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    if not base or not Path(base).is_absolute():
        base = str(Path("~/.local/share").expanduser())
    return Path(base) / "protobench"


def home() -> Path:
    """The directory of the store and logs (read from the environment on each call)."""
    value = os.environ.get(ENV, "").strip()
    if value:
        return Path(value).expanduser()
    if checkout_root(_PACKAGE) is not None:
        return CHECKOUT_HOME
    return user_data_dir()
