"""``protobench profiles list | show NAME | new NAME``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.common import fail
from protobench.cli.complete import builtins, profiles
from protobench.termtext import echo

_NAME_KEY = re.compile(r"^name\s*=")

app = typer.Typer(help="List, show and create workload profiles.", no_args_is_help=True)


@app.command("list")
def list_profiles() -> None:
    """List the built-in profiles with their protocol and description.

    \b
    Example:
      protobench profiles list

    \b
    Exit codes: 0 ok.
    """
    from protobench.profiles import loader  # noqa: PLC0415 - pydantic: not for --help

    for name in loader.builtin_names():
        try:
            profile = loader.load(name).profile
            echo(f"{name:20} {profile.protocol:10} {profile.description}")
        except loader.ProfileError as exc:
            echo(f"{name:20} {'?':10} (cannot load: {exc})")


@app.command("show")
def show(
    name: Annotated[
        str,
        typer.Argument(
            metavar="PROFILE", help="Built-in name or file path.", autocompletion=profiles
        ),
    ],
) -> None:
    """Print a profile's TOML text.

    \b
    Examples:
      protobench profiles show mqtt-fanout
      protobench profiles show ./mine.toml

    \b
    Exit codes: 0 ok, 2 bad input (unknown profile, a file that does not load).
    """
    from protobench.profiles import loader  # noqa: PLC0415 - pydantic: not for --help

    try:
        echo(loader.load(name).text, nl=False)
    except loader.ProfileError as exc:
        fail(str(exc))


@app.command("new")
def new(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Name of the new profile (file NAME.toml).")
    ],
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="PROFILE",
            help="Built-in profile to start from.",
            autocompletion=builtins,
        ),
    ] = "http-get",
    directory: Annotated[
        Path, typer.Option("--dir", metavar="DIR", help="Where to write it.")
    ] = Path("."),
) -> None:
    """Write a new profile file, copied from a built-in one (only its top-level name changes).

    \b
    Examples:
      protobench profiles new mine --from mqtt-fanout
      protobench profiles new api --from http-get --dir profiles/

    \b
    Exit codes: 0 written (its path on stdout), 2 bad input (a bad name, the
    file exists, the directory cannot be written).
    """
    from protobench.profiles import loader  # noqa: PLC0415 - pydantic: not for --help
    from protobench.profiles.model import check_name  # noqa: PLC0415

    try:
        check_name(name)
        text = loader.load(source).text
    except ValueError as exc:
        fail(f"profiles new: {exc}")
    except loader.ProfileError as exc:
        fail(str(exc))
    path = directory / f"{name}.toml"
    if path.exists():
        fail(f"{path} exists already")
    try:
        path.write_text(rename(text, name), encoding="utf-8")
    except OSError as exc:
        fail(f"{path}: cannot write: {exc.strerror or exc}")
    echo(str(path))


def rename(text: str, name: str) -> str:
    """Profile ``text`` with its top-level ``name`` set to ``name``; groups keep theirs.

    The top-level keys are those before the first table header (``[options]``,
    ``[[group]]``...), so only a ``name =`` line there is replaced.
    """
    lines = text.splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("["):
            break
        if _NAME_KEY.match(stripped):
            lines[number] = f'name = "{name}"'
            return "\n".join(lines) + "\n"
    return f'name = "{name}"\n' + text
