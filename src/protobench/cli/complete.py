"""Shell completion of profile names and snapshot references (``protobench --install-completion``).

Each function is a Typer ``autocompletion`` callback: it lists names without
loading a profile or reading a snapshot, so a TAB answers as fast as ``--help``.
A file whose name holds a control character is not offered (the shell would
print it to the terminal as it is).

- :func:`profiles`: the built-in profiles, then ``*.toml`` files and
  directories under what is typed (``run``, ``sweep``, ``profiles show``);
- :func:`builtins`: the built-in profiles alone (``profiles new --from``);
- :func:`snapshot_refs`: ``latest``, ``latest~N`` for each older run, and the
  ids in the store (``--snapshots-dir`` when given before, else
  ``<home>/snapshots``, :mod:`protobench.home`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from protobench.profiles import builtin
from protobench.snapshots.store import SUFFIX, SnapshotStore
from protobench.termtext import visible

MAX_BACK = 20
"""``latest~N`` is offered up to this N (any N is accepted)."""


def _unsafe(name: str) -> bool:
    return visible(name) != name


def builtins(incomplete: str) -> list[str]:
    """Built-in profile names that start with ``incomplete``."""
    return [name for name in builtin.names() if name.startswith(incomplete)]


def _files(incomplete: str) -> list[str]:
    """Profile files (``*.toml``) and directories whose path starts with ``incomplete``."""
    typed = Path(incomplete) if incomplete else Path()
    folder, stem = (typed, "") if incomplete.endswith("/") else (typed.parent, typed.name)
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    prefix = "" if str(folder) == "." and not incomplete.startswith("./") else f"{folder}/"
    found = []
    for entry in entries:
        if not entry.name.startswith(stem) or entry.name.startswith(".") or _unsafe(entry.name):
            continue
        if entry.is_dir():
            found.append(f"{prefix}{entry.name}/")
        elif entry.suffix == ".toml":
            found.append(f"{prefix}{entry.name}")
    return found


def profiles(incomplete: str) -> list[str]:
    """Built-in profile names, then profile files, that start with ``incomplete``."""
    return builtins(incomplete) + _files(incomplete)


def snapshot_refs(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """``latest``, ``latest~N`` and the stored ids, each with the id it names."""
    given = ctx.params.get("snapshots_dir")
    ids = [
        path.name.removesuffix(SUFFIX)
        for path in SnapshotStore(given).paths()
        if not _unsafe(path.name)
    ]
    newest_first = ids[::-1]
    refs = [("latest", newest_first[0])] if ids else []
    refs += [(f"latest~{n}", run) for n, run in enumerate(newest_first[1 : MAX_BACK + 1], 1)]
    refs += [(run, "") for run in newest_first]
    return [(ref, about) for ref, about in refs if ref.startswith(incomplete)]


ProfileArgument = Annotated[
    str,
    typer.Argument(
        metavar="PROFILE|URL",
        help="Built-in profile name, a profile file, or a URL (a run of one HTTP request).",
        autocompletion=profiles,
    ),
]
"""The PROFILE argument of ``run`` and ``sweep``: built-in names and files complete."""

SnapshotRef = Annotated[
    str,
    typer.Argument(
        metavar="REF",
        help="Snapshot id, id prefix, file, latest or latest~N.",
        autocompletion=snapshot_refs,
    ),
]
"""A snapshot reference argument: latest, latest~N and the stored ids complete."""
