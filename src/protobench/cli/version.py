"""``protobench --version``: the release, and the git commit of a development install.

A development install is the package imported from a source checkout (its
``src/protobench`` sits under a directory with ``pyproject.toml`` and ``.git``);
an installed wheel prints the release alone. Only the standard library is used,
and git only when the checkout is there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from protobench import __version__
from protobench.home import checkout_root


def commit_of(root: Path) -> str | None:
    """``root``'s HEAD as a short hash, ``-dirty`` when it has changes; None without git."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12", "--exclude=*"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def version_line(package: Path | None = None) -> str:
    """``protobench 0.1.0``, with ``(git <commit>)`` for a development install."""
    import protobench  # noqa: PLC0415 - where this package was imported from

    root = checkout_root(package or Path(protobench.__file__).parent)
    commit = commit_of(root) if root is not None else None
    return f"protobench {__version__}" + (f" (git {commit})" if commit else "")
