"""Text from a server or a file made safe for the user's terminal: the one rule, and its writer.

A string a server sent (an error text, a status or close reason, a grid's
``dis``) or a file holds (a snapshot's op names, labels and notices, a profile's
description, a log line) may carry control characters: ESC opening a CSI, OSC,
DCS, APC or PM sequence (clear the screen, set the window title, write the
clipboard, open a hyperlink), BEL, their 8-bit C1 forms (U+0080..U+009F), DEL.
On a terminal they are commands, not text. :func:`visible` shows each one as
an escape (``\\x1b``, ``\\x07``, ``\\n``...): the text is still there to read,
and none of it acts on the terminal. Lone surrogates (from a JSON ``\\ud800``)
are shown the same way (they cannot be written as UTF-8 at all).

It is applied at the gates where text enters a terminal, never per call site:

- :func:`echo` is the only writer of plain text for a terminal (the summary,
  ``snapshots``, ``diff``, ``sweep``, ``profiles``, ``discover``, every error
  line on stderr); ``tests/test_termtext.py`` fails when a command
  writes to stdout or stderr any other way. Its lines keep their breaks;
  the table builders (``cli.render.summary_table``, ``cli.diff_text.render_text``,
  the ``sweep`` table) pass their data through :func:`visible_tree` first, so a
  line break inside a field is shown, not obeyed, and columns stay aligned;
- the monitor renders a ``tui.display.Display`` that ``MonitorApp`` builds through
  :func:`visible_tree` (every panel), its notifications and its logs screen;
- a library's warning logged in the CLI's process (Python's last-resort handler
  on stderr) is formatted by :class:`VisibleFormatter`.

JSON, NDJSON and the exports keep the exact strings (JSON escapes them); the
HTML report escapes them as HTML. Nothing of ours is imported here.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
import sys
from collections.abc import Mapping
from typing import Any

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every C0 and C1 control character, DEL and lone surrogate as an escape.

    ``"\\x1b]0;title\\x07"`` becomes ``"\\\\x1b]0;title\\\\x07"``; a tab, a line
    break and a carriage return become ``\\t``, ``\\n``, ``\\r``, unless
    ``keep_newlines`` (a block of lines: each line break stays one). The same
    object when there is nothing to show (the common case); applied twice, the
    result is the same.
    """
    pattern = _CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL
    if pattern.search(text) is None:
        return text
    return pattern.sub(_shown, text)


def visible_tree[T](value: T, *, keep_newlines: bool = False) -> T:
    """``value`` with :func:`visible` applied to every string in it.

    Walks dataclass instances (frozen ones too), mappings (keys and values),
    lists and tuples; anything else is kept. A part with nothing to show is the
    same object, so a tree without control characters comes back as it was.
    """
    return _tree(value, keep_newlines)  # type: ignore[no-any-return]


_ATOMS = frozenset({int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}
"""The field names of each dataclass met (``dataclasses.fields`` costs a call each time)."""


def _tree(value: Any, keep: bool) -> Any:
    kind = type(value)
    if kind in _ATOMS:  # most of a view: figures
        return value
    if kind is str:
        return visible(value, keep_newlines=keep)
    if kind is dict or isinstance(value, Mapping):
        items = [(_tree(k, keep), _tree(v, keep)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        if not isinstance(value, dict):
            return dict(items)
        mapping = copy.copy(value)  # a Counter stays a Counter
        mapping.clear()
        mapping.update(dict(items))
        return mapping
    if isinstance(value, str):  # a StrEnum
        return visible(value, keep_newlines=keep)
    if isinstance(value, list | tuple):
        parts = [_tree(item, keep) for item in value]
        if all(new is old for new, old in zip(parts, value, strict=True)):
            return value
        return value._make(parts) if hasattr(value, "_make") else type(value)(parts)
    names = _FIELDS.get(kind)
    if names is None and dataclasses.is_dataclass(kind):
        names = _FIELDS[kind] = tuple(each.name for each in dataclasses.fields(kind))
    if names is not None:
        changed = {}
        for name in names:
            old = getattr(value, name)
            new = _tree(old, keep)
            if new is not old:
                changed[name] = new
        if not changed:
            return value
        replaced = copy.copy(value)
        for name, new in changed.items():
            object.__setattr__(replaced, name, new)  # frozen dataclasses too
        return replaced
    return value


class VisibleFormatter(logging.Formatter):
    """A log record's text as :func:`visible` shows it (lines kept), for a terminal's handler."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record), keep_newlines=True)


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Write ``text`` for a terminal on stdout (stderr with ``err``): its lines made visible.

    Its line breaks stay; every other control character is shown as an escape.
    """
    stream = sys.stderr if err else sys.stdout
    stream.write(visible(text, keep_newlines=True) + ("\n" if nl else ""))
    stream.flush()
