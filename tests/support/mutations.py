"""Hostile inputs for the property-based validation tests: mutated profiles and flag values.

A mutation takes a built-in profile (as TOML data), picks one key path (a top
key, a table entry, a group parameter, an element of a list) and replaces its
value with a hostile one (a wrong type, nan/inf, zero, negative, huge, a table
where a scalar is expected) or removes it; :func:`to_toml` writes the result
back, one key per line. ``PROTOBENCH_HYPOTHESIS_EXAMPLES`` raises the number
of examples for a longer run (the default keeps ``make test`` fast; a long run needs
``--timeout 0``, as pytest's timeout covers all the examples of a test).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("PROTOBENCH_HYPOTHESIS_EXAMPLES", "150"))

HOSTILE_CONSTANTS: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    0,
    0.0,
    -1,
    -0.5,
    2**63 - 1,
    -(2**63),
    1e308,
    5e-324,
    True,
    False,
    "",
    "0s",
    "0",
    "-1s",
    "nan",
    "inf",
    "1e999",
    "0/s",
    "99999999999999999999h",
    "abc",
    "../../../escaped",
    "x" * 300,
    [],
    [1, "a"],
    [[1]],
    {},
    {"a": 1},
    {"b": [1, {"c": "d"}]},
]

hostile_values = st.one_of(
    st.sampled_from(HOSTILE_CONSTANTS),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(min_value=-5, max_value=5), max_size=2),
)

REMOVE = object()
"""A mutation that deletes the key."""


def key_paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in ``data`` (tables and lists included, leaves too)."""
    paths: list[tuple[Any, ...]] = []
    items: list[tuple[Any, Any]] = []
    if isinstance(data, dict):
        items = list(data.items())
    elif isinstance(data, list):
        items = list(enumerate(data))
    for key, value in items:
        path = (*prefix, key)
        paths.append(path)
        paths.extend(key_paths(value, path))
    return paths


def mutate(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``data`` with ``path`` set to ``value`` (or removed for :data:`REMOVE`)."""
    copy = json.loads(json.dumps(data))
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    if value is REMOVE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copy


def toml_key(key: str) -> str:
    """``key`` bare when TOML allows it, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """``value`` as a TOML inline value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def to_toml(data: dict[str, Any]) -> str:
    """A profile's data as TOML: top keys, then ``[options]``/``[serve]``, then ``[[group]]``."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    groups: list[dict[str, Any]] | None = None
    for key, value in data.items():
        if key in ("options", "serve") and isinstance(value, dict):
            tables.append((key, value))
        elif key == "group" and isinstance(value, list) and all(isinstance(g, dict) for g in value):
            groups = value
        else:
            lines.append(f"{toml_key(key)} = {toml_value(value)}")
    for name, table in tables:
        lines.append(f"[{name}]")
        lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items())
    for group in groups or []:
        lines.append("[[group]]")
        lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in group.items())
    return "\n".join(lines) + "\n"
