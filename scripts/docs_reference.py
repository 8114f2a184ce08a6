"""The documentation's reference pages, generated from the code when the site is built.

An MkDocs hook (``hooks:`` in ``mkdocs.yml``): :func:`on_files` adds two pages that
are never written by hand, so neither can drift from what they describe:

- ``reference/cli.md``: every command's ``--help`` as the command line prints it
  (Typer's app, at a fixed width), and the options of every embedded target;
- ``reference/profile.md``: the keys of a profile and of a ``[[group]]`` from the
  profile's JSON Schema (``protobench schema profile``), each run setting with its
  flag, environment variable and ``sweep --vary`` key from the run-settings table
  (:mod:`protobench.profiles.settings`).

``python scripts/docs_reference.py DIR`` writes both pages into ``DIR`` (to read them
without building the site).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REFERENCE = "reference"
WIDTH = 100
"""The terminal width the help is formatted for."""


def _help(*args: str) -> str:
    from typer.testing import CliRunner  # noqa: PLC0415

    from protobench.cli import app  # noqa: PLC0415

    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=WIDTH)
    if result.exit_code != 0:
        raise RuntimeError(f"protobench {' '.join(args)} --help exited {result.exit_code}")
    return result.stdout.rstrip()


def _fence(text: str) -> str:
    return f"```text\n{text}\n```\n"


def _cell(text: object) -> str:
    """Text for a table cell: ``|`` escaped outside code spans (inside, Markdown keeps it)."""
    parts = str(text).replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def cli_reference() -> str:
    """``reference/cli.md``: ``protobench --help`` and every command's, then the targets'."""
    from protobench.cli import COMMANDS  # noqa: PLC0415
    from protobench.cli.serve_cmd import target_options  # noqa: PLC0415
    from protobench.protocols.registry import PluginError  # noqa: PLC0415
    from protobench.targets import registry  # noqa: PLC0415

    parts = [
        "# Command line\n",
        "Every command's `--help`, as `protobench` prints it (generated from the command line "
        "itself when this site is built). The exit codes are on "
        "[Exit codes and failures](../concepts/exit-codes.md).\n",
        "## protobench\n",
        _fence(_help()),
    ]
    for name, entry in COMMANDS.items():
        subs = getattr(entry.load(name), "commands", {})
        parts += [f"## protobench {name}\n", _fence(_help(name))]
        for sub in subs:
            parts += [f"### protobench {name} {sub}\n", _fence(_help(name, sub))]
    parts.append(
        "## Options of the embedded targets\n\n"
        "What `protobench serve NAME --help` lists for each target: the flags of "
        "`protobench serve NAME`, the keys of a profile's `[serve]` table (with `_` for `-`) "
        "and of `--serve-opt KEY=VALUE`.\n"
    )
    for target in registry.names():
        parts.append(f"### {target}\n")
        try:
            rows = target_options(target)
        except PluginError as exc:  # its extra is not installed where the site is built
            parts.append(f"{exc}\n")
            continue
        table = ["| option | meaning |", "|---|---|"]
        table += [f"| {_cell(f'`{flag}`')} | {_cell(about)} |" for flag, about in rows]
        parts.append("\n".join(table) + "\n")
    return "\n".join(parts)


_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("minLength", "length >="),
    ("maxLength", "length <="),
    ("minItems", "items >="),
)


def _bounds(schema: dict[str, Any]) -> str:
    """A schema's bounds in words: ``>= 1, <= 256`` (of whichever of its types has them)."""
    for option in schema.get("anyOf", [schema]):
        found = [f"{word} {option[key]}" for key, word in _BOUNDS if key in option]
        if found:
            return ", ".join(found)
    return ""


def _type(schema: dict[str, Any]) -> str:
    """A schema's type in words: ``integer (>= 1, <= 1000000)``, ``number or string``..."""
    words = []
    for option in schema.get("anyOf", [schema]):
        kind = option.get("type", "")
        if kind == "null":
            continue
        if kind == "array":
            kind = f"array of {option.get('items', {}).get('type', 'tables')}"
        words.append(kind)
    text = " or ".join(dict.fromkeys(words)) or "any"
    bounds = _bounds(schema)
    return f"{text} ({bounds})" if bounds else text


def _default(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in schema or schema["default"] is None:
        return "none"
    value = schema["default"]
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _kind_words(name: str) -> str:
    """What a run setting's value is, in words (from its kind in the table)."""
    from protobench.profiles import settings  # noqa: PLC0415

    kind = settings.BY_NAME[name].kind
    words = {
        id(settings.DURATION): "duration: `30s`, `500ms`, `2m` or seconds",
        id(settings.RATE): "rate: `5000/s`, `300/m` or per second",
        id(settings.COUNT): "whole number",
        id(settings.TEXT): "text",
        id(settings.EXPRESSIONS): "array of threshold expressions",
        id(settings.PAIRS): "table",
        id(settings.SWITCH): "`true` or `false`",
        id(settings.NAMES): "array of names",
    }
    return words[id(kind)]


def _setting_default(name: str, schema: dict[str, Any]) -> str:
    """A run setting's default as a profile would write it: ``10s``, ``100µs``, empty..."""
    from protobench.profiles import settings  # noqa: PLC0415
    from protobench.vocab.units import format_duration  # noqa: PLC0415

    kind = settings.BY_NAME[name].kind
    value = schema.get("default")
    if kind is settings.DURATION and value is not None:
        return f"`{format_duration(value)}`"
    if kind is settings.PAIRS and value is None:
        return "empty"
    return _default(schema, False)


def profile_reference() -> str:
    """``reference/profile.md``: the profile's keys, the run settings, the group's keys."""
    from protobench.profiles.settings import BY_NAME, SETTINGS  # noqa: PLC0415
    from protobench.snapshots.schemas import profile_schema  # noqa: PLC0415

    schema = profile_schema()
    required = set(schema.get("required", []))
    own = [key for key in schema["properties"] if key not in BY_NAME]
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key in own:
        prop = schema["properties"][key]
        rows.append(
            f"| `{key}` | {_type(prop)} | {_default(prop, key in required)} "
            f"| {_cell(prop.get('description', ''))} |"
        )
    settings = [
        "| key | value | default | flag | environment | `sweep --vary` | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting in SETTINGS:
        prop = schema["properties"][setting.name]
        flag = ", ".join(f"`{f}`" for f in (setting.flag, setting.short) if f) or "-"
        env = f"`{setting.env}`" if setting.env else "-"
        vary = f"`{setting.vary_key}`" if setting.vary else "-"
        bounds = _bounds(prop)
        value = _kind_words(setting.name) + (f" ({bounds})" if bounds else "")
        settings.append(
            f"| `{setting.name}` | {_cell(value)} | {_setting_default(setting.name, prop)} "
            f"| {flag} | {env} "
            f"| {vary} | {_cell(setting.help)} |"
        )
    group = schema["definitions"]["GroupSpec"]
    group_required = set(group.get("required", []))
    group_rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, prop in group["properties"].items():
        group_rows.append(
            f"| `{key}` | {_type(prop)} | {_default(prop, key in group_required)} "
            f"| {_cell(prop.get('description', ''))} |"
        )
    return "\n".join(
        [
            "# Profile reference\n",
            "Generated when this site is built from the profile's JSON Schema "
            "(`protobench schema profile`, which editors read too: see "
            "[Schemas](../outputs/schemas.md)) and the run-settings table "
            "(`protobench/profiles/settings.py`), so it lists every key the loader accepts. "
            "How profiles are written, validated and which are built in: "
            "[Profiles](../guide/profiles.md).\n",
            "## The profile's own keys\n",
            "\n".join(rows) + "\n",
            "## Run settings\n",
            "Keys of a profile that a flag of `run` and `sweep` overrides (the flag's value "
            "comes from its environment variable when the flag is not given: "
            "[Running](../guide/run.md)); `sweep --vary` runs once per level of those it takes.\n",
            "\n".join(settings) + "\n",
            "## `[[group]]`\n",
            "Keys other than these are the operation's parameters, validated by the protocol "
            "plugin: see each [protocol's page](../protocols/index.md).\n",
            "\n".join(group_rows) + "\n",
            "## `[options]` and `[serve]`\n",
            "`[options]` are the protocol plugin's options (each protocol's page lists them); "
            "`[serve]` the embedded target's, listed in the "
            "[command-line reference](cli.md#options-of-the-embedded-targets).\n",
        ]
    )


PAGES = {"cli.md": cli_reference, "profile.md": profile_reference}
"""Each generated page of ``reference/`` and what writes it."""


def on_files(files: Any, config: Any) -> Any:
    """MkDocs: add the generated pages to the site's files."""
    from mkdocs.structure.files import File  # noqa: PLC0415

    for name, make in PAGES.items():
        files.append(File.generated(config, f"{REFERENCE}/{name}", content=make()))
    return files


def main(argv: list[str]) -> int:
    """Write the generated pages into the directory given."""
    if len(argv) != 1:
        print("usage: python scripts/docs_reference.py DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in PAGES.items():
        (out / name).write_text(make(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
