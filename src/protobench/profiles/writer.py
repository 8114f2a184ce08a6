"""Profiles written as TOML text: :func:`dumps` of a profile's data, read back the same.

The values a profile holds: strings, whole and decimal numbers, booleans,
arrays of them, tables (``[options]``, ``[group.headers]``) and the array of
``[[group]]`` tables. Strings are TOML basic strings with every character TOML
does not take as is escaped, so any text reads back as it was
(``tomllib.loads(dumps(data)) == data``, a test checks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_ESCAPES["\r"] = "\\r"


def _char(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    if c < " " or c == "\x7f":
        return f"\\u{ord(c):04x}"
    return c


def string(text: str) -> str:
    """A TOML basic string of ``text``."""
    return '"' + "".join(_char(c) for c in text) + '"'


def key(name: str) -> str:
    """A key: bare when it can be, else quoted."""
    return name if _BARE.fullmatch(name) else string(name)


def value(item: Any) -> str:
    """An inline TOML value: a scalar, an array or an inline table."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, float):
        if not math.isfinite(item):
            raise ValueError(f"a profile holds finite numbers only, got {item}")
        return repr(item)
    if isinstance(item, str):
        return string(item)
    if isinstance(item, Mapping):
        inner = ", ".join(f"{key(str(k))} = {value(v)}" for k, v in item.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(item, Sequence):
        return "[" + ", ".join(value(v) for v in item) + "]"
    raise TypeError(f"a profile cannot hold a {type(item).__name__}")


def _is_tables(item: Any) -> bool:
    return (
        isinstance(item, Sequence)
        and not isinstance(item, str)
        and bool(item)
        and all(isinstance(v, Mapping) for v in item)
    )


def _table(data: Mapping[str, Any], path: str) -> list[str]:
    """The key/value lines of a table, then its sub-tables and arrays of tables."""
    lines = [
        f"{key(k)} = {value(v)}"
        for k, v in data.items()
        if not isinstance(v, Mapping) and not _is_tables(v)
    ]
    for name, item in data.items():
        inner = f"{path}.{key(name)}" if path else key(name)
        if isinstance(item, Mapping):
            lines += ["", f"[{inner}]", *_table(item, inner)]
        elif _is_tables(item):
            for table in item:
                lines += ["", f"[[{inner}]]", *_table(table, inner)]
    return lines


def dumps(data: Mapping[str, Any]) -> str:
    """``data`` as a TOML document: its keys first, then its tables in order."""
    return "\n".join(_table(data, "")).lstrip("\n") + "\n"
