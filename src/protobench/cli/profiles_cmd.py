"""``protobench profiles list | show NAME | new NAME``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from protobench.cli.common import fail
from protobench.profiles import loader

app = typer.Typer(help="List, show and create workload profiles.", no_args_is_help=True)


@app.command("list")
def list_profiles() -> None:
    """List the built-in profiles with their protocol and description."""
    for name in loader.builtin_names():
        try:
            profile = loader.load(name).profile
            typer.echo(f"{name:20} {profile.protocol:10} {profile.description}")
        except loader.ProfileError as exc:
            typer.echo(f"{name:20} {'?':10} (cannot load: {exc})")


@app.command("show")
def show(name: Annotated[str, typer.Argument(help="Built-in name or file path.")]) -> None:
    """Print a profile's TOML text."""
    try:
        typer.echo(loader.load(name).text, nl=False)
    except loader.ProfileError as exc:
        fail(str(exc))


@app.command("new")
def new(
    name: Annotated[str, typer.Argument(help="Name of the new profile (file NAME.toml).")],
    source: Annotated[
        str, typer.Option("--from", help="Built-in profile to start from.")
    ] = "http-get",
    directory: Annotated[Path, typer.Option("--dir", help="Where to write it.")] = Path("."),
) -> None:
    """Write a new profile file, copied from a built-in one."""
    try:
        text = loader.load(source).text
    except loader.ProfileError as exc:
        fail(str(exc))
    path = directory / f"{name}.toml"
    if path.exists():
        fail(f"{path} exists already")
    lines = text.splitlines()
    renamed = [f'name = "{name}"' if line.startswith("name =") else line for line in lines]
    path.write_text("\n".join(renamed) + "\n", encoding="utf-8")
    typer.echo(str(path))
