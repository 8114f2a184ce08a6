"""``protobench --help`` without Typer: the root's help from the table, as Click lays it out.

Importing Typer is most of what ``protobench --help`` costs (about 65 ms of CPU of
95). The root's help is the same text every time, made of
:data:`~protobench.cli.table.ROOT_HELP`, the root's options and the table of
commands, so it is printed here with Click's layout rules (its ``HelpFormatter``:
the width, the ``\\b`` paragraphs kept as written, the two-column lists), and a test
checks that it is exactly what Typer prints at several widths.
"""

from __future__ import annotations

import shutil
import textwrap

from protobench.cli.table import COMMANDS, ROOT_HELP, VERSION_HELP

OPTIONS = (
    ("--version", VERSION_HELP),
    ("--install-completion", "Install completion for the current shell."),
    (
        "--show-completion",
        "Show completion for the current shell, to copy it or customize the installation.",
    ),
    ("-h, --help", "Show this message and exit."),
)
"""The root's options as Typer declares them (the two completion options are Typer's)."""
INDENT = 2


def _wrap(text: str, width: int, indent: str = "") -> str:
    """Click's ``wrap_text(..., preserve_paragraphs=True)``: ``\\b`` blocks kept, others filled."""
    paragraphs: list[tuple[int, bool, list[str]]] = []
    lines: list[str] = []
    first_indent: int | None = None
    for line in [*text.splitlines(), ""]:
        if line:
            if first_indent is None:
                first_indent = len(line) - len(line.lstrip())
            lines.append(line.lstrip() if not lines else line)
        elif lines:
            raw = lines[0].strip() == "\b"
            paragraphs.append((first_indent or 0, raw, lines[1:] if raw else lines))
            lines, first_indent = [], None
    out = []
    for extra, raw, body in paragraphs:
        prefix = indent + " " * extra
        if raw:
            out.append("\n".join(prefix + line for line in body))
        else:
            out.append(
                textwrap.fill(
                    " ".join(body),
                    width,
                    initial_indent=prefix,
                    subsequent_indent=prefix,
                    replace_whitespace=False,
                )
            )
    return "\n\n".join(out)


def _definitions(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Click's ``write_dl`` at one indent: the terms, then their wrapped text."""
    first = min(max(len(term) for term, _ in rows), 30) + 2
    out = []
    for term, text in rows:
        lines = _wrap(text, max(width - first - 2, 10)).splitlines()
        if len(term) <= first - 2:
            out.append(" " * INDENT + term + " " * (first - len(term)) + lines[0])
        else:
            out.append(" " * INDENT + term)
            out.append(" " * (first + INDENT) + lines[0])
        out.extend(" " * (first + INDENT) + line for line in lines[1:])
    return out


def render(columns: int | None = None) -> str:
    """The root's help for a terminal ``columns`` wide (default: this terminal's)."""
    if columns is None:
        columns = shutil.get_terminal_size().columns
    width = max(min(columns, 80) - 2, 50)
    commands = [(name, entry.summary) for name, entry in COMMANDS.items()]
    parts = [
        "Usage: protobench [OPTIONS] COMMAND [ARGS]...",
        "",
        _wrap(ROOT_HELP, width, " " * INDENT),
        "",
        "Options:",
        *_definitions(list(OPTIONS), width),
        "",
        "Commands:",
        *_definitions(commands, width),
    ]
    return "\n".join(parts) + "\n"
