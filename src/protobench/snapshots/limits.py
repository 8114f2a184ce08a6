"""What the snapshot loader accepts: bounds far above any real run, so that a file made to
exhaust memory or time (a gzip bomb, a series of millions of records, a string of hundreds
of MiB, a histogram of another shape) is refused with one line, in bounded time and memory.

The engine itself bounds what a run writes: a phase keeps at most
:data:`~protobench.engine.aggregate.SERIES_LIMIT` + 1 interval records and as many resource
samples, however long the run (a 24 h run at 250 ms intervals, 345,600 intervals, keeps
3,601 sustain records); a target profile keeps at most 20,000 stacks of 256 frames
(:mod:`protobench.engine.stacks.model`); every histogram has the one factory's shape (1 µs
.. 60 s, 3 significant digits). From that:

* :data:`MAX_JSON_BYTES` (128 MiB of JSON once decompressed): a 24 h run of 16 ops at
  250 ms intervals writes about 52 MiB (3,601 sustain records of about 0.9 KiB per op);
  the limit is two and a half times that. The gzip stream is read 1 MiB at a time and no
  further than the limit (a gzip bomb costs that much, once).
* :data:`MAX_VALUES` (16 million values: numbers, strings, lists, objects), counted in the
  JSON text before it is parsed (commas and brackets): it bounds what parsing can
  allocate (128 MiB of ``[{},{},...]`` would become 3 GB of Python objects). Such a 24 h
  run holds 1.9 million; a target profile at its bound 5 million.
* :data:`FREE_FORM_VALUES`: the parts kept as written, whatever JSON they hold, hold few
  (labels and provenance 10,000 values, the plan 1,000,000); the typed parts are checked
  value by value, stopping at the first wrong one.
* :func:`max_records` (21,606): series records, and resource samples, twice what the
  three phases can hold; a profile's stacks and table of functions as its own bounds.
* :data:`MAX_NOTICES` (10,000): a run's notices (a worker lost, a pause, a rate change...).
* :data:`MAX_ITEMS` (10,000): any other list or object (ops, groups, counters, labels).
* :data:`MAX_STRING` (1 MiB): any string but an encoded histogram (a profile's inline
  request body is the longest a run writes).
* :data:`MAX_HISTOGRAM` (256 KiB): an encoded histogram; its factory's shape, with every
  counter set to a different 64-bit value, encodes to about 210 KB. Its compressed
  payload must inflate to no more than the shape's largest encoding (157 KB) and carry
  the factory's shape (:func:`histogram_problem`), so decoding one allocates 136 KiB.
"""

from __future__ import annotations

import base64
import binascii
import functools
import struct
import zlib
from collections.abc import Callable
from typing import Any, Final

from protobench.engine.thinning import PHASES, SERIES_LIMIT
from protobench.vocab.exceptions import BadInput
from protobench.vocab.units import format_size

MAX_JSON_BYTES: Final = 128 * 1024 * 1024
MAX_VALUES: Final = 16_000_000
MAX_NOTICES: Final = 10_000
MAX_ITEMS: Final = 10_000
MAX_STRING: Final = 1024 * 1024
MAX_HISTOGRAM: Final = 256 * 1024
HISTOGRAM_KEYS: Final = frozenset({"hist", "hist_uncorrected"})
FREE_FORM_VALUES: Final = {"labels": 10_000, "provenance": 10_000, "plan": 1_000_000}
"""The values of the parts kept as written, whatever JSON they hold (by top-level key)."""


@functools.cache
def max_records() -> int:
    """Series records (and resource samples) accepted: twice what a run's phases keep."""
    return 2 * len(PHASES) * (SERIES_LIMIT + 1)


@functools.cache
def _list_bounds() -> dict[str, int]:
    """The lists allowed more than :data:`MAX_ITEMS` items, by key: a run's own bounds."""
    from protobench.engine.stacks.model import MAX_DEPTH, MAX_STACKS  # noqa: PLC0415

    records = max_records()
    return {
        "series": records,
        "resources": records,
        "notices": MAX_NOTICES,
        "stacks": MAX_STACKS + 1,  # and the one of the stacks merged away
        "frames": (MAX_STACKS + 1) * MAX_DEPTH,  # a profile's table of functions
    }


_EXTERNAL_HEADER: Final = struct.Struct(">II")
_PAYLOAD_HEADER: Final = struct.Struct(">IIIIQQd")


class TooLarge(BadInput):
    """A file over one of the loader's bounds (the message says which)."""


def read_bounded(read: Callable[[int], bytes]) -> bytes:
    """The JSON text ``read(n)`` gives, read 1 MiB at a time and refused (:class:`TooLarge`)
    as soon as it passes :data:`MAX_JSON_BYTES` or :data:`MAX_VALUES`."""
    chunks: list[bytes] = []
    size = values = 0
    while chunk := read(1 << 20):
        size += len(chunk)
        if size > MAX_JSON_BYTES:
            raise TooLarge(f"more than {format_size(MAX_JSON_BYTES)} of JSON once decompressed")
        values += chunk.count(b",") + chunk.count(b"[") + chunk.count(b"{")
        if values > MAX_VALUES:
            raise TooLarge(f"more than {MAX_VALUES:,} JSON values")
        chunks.append(chunk)
    return b"".join(chunks)


def over_limit(data: object) -> str | None:
    """The first bound parsed JSON ``data`` is over, as one line naming where; else ``None``."""
    if type(data) is not dict:
        return _over(data, "the file", MAX_VALUES)
    for key, value in data.items():
        budget = FREE_FORM_VALUES.get(key, MAX_VALUES) if type(key) is str else MAX_VALUES
        why = _over({key: value}, str(key), budget)
        if why is not None:
            return why
    return None


def _over(data: object, name: str, budget: int) -> str | None:
    """The first bound ``data`` is over, its values counted against ``budget`` (``name``
    says whose they are)."""
    if type(data) is not dict and type(data) is not list:
        return None
    lists = _list_bounds()
    stack: list[tuple[Any, str]] = [(data, "")]
    values = 0
    while stack:
        node, where = stack.pop()
        values += len(node)  # every node stacked is a dict or a list
        if values > budget:
            return f"{name}: more than {budget:,} values"
        if type(node) is dict:
            limit = MAX_ITEMS
            if len(node) > limit:
                return f"{where or 'the file'}: {len(node):,} keys (at most {limit:,})"
            for key, value in node.items():
                if type(key) is str and len(key) > MAX_STRING:
                    return f"{where or 'the file'}: a key of {len(key):,} characters"
                path = f"{where}.{key}" if where else str(key)
                if type(value) is str:
                    bound = MAX_HISTOGRAM if key in HISTOGRAM_KEYS else MAX_STRING
                    if len(value) > bound:
                        return f"{path}: {len(value):,} characters (at most {format_size(bound)})"
                elif type(value) is list:
                    bound = lists.get(key, MAX_ITEMS)
                    if len(value) > bound:
                        return f"{path}: {len(value):,} items (at most {bound:,})"
                    stack.append((value, path))
                elif type(value) is dict:
                    stack.append((value, path))
        elif type(node) is list:
            for index, value in enumerate(node):
                if type(value) is str:
                    if len(value) > MAX_STRING:
                        return f"{where}[{index}]: {len(value):,} characters (at most 1 MiB)"
                elif type(value) is list:
                    if len(value) > MAX_ITEMS:
                        return f"{where}[{index}]: {len(value):,} items (at most {MAX_ITEMS:,})"
                    stack.append((value, f"{where}[{index}]"))
                elif type(value) is dict:
                    stack.append((value, f"{where}[{index}]"))
    return None


def histogram_problem(encoded: str) -> str | None:
    """Why ``encoded`` cannot be the encoding of a histogram of the factory's shape, or ``None``
    when it may be (its payload inflates to no more than the shape's largest encoding, 9
    bytes per counter, and has the factory's shape); the decoder checks the rest."""
    from protobench.engine import metrics  # noqa: PLC0415 - numpy, when a histogram is read

    largest = _PAYLOAD_HEADER.size + 9 * len(metrics.HIGHEST)
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return "not base64"
    if len(raw) < _EXTERNAL_HEADER.size:
        return "too short"
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(raw[_EXTERNAL_HEADER.size :], largest + 1)
    except zlib.error:
        return "not a compressed payload"
    if len(payload) > largest:
        return f"inflates past {largest:,} bytes, the most a histogram takes"
    if len(payload) < _PAYLOAD_HEADER.size:
        return "too short"
    _, _, _, digits, lowest, highest, _ = _PAYLOAD_HEADER.unpack_from(payload)
    shape = (metrics.LOWEST_US, metrics.HIGHEST_US, metrics.SIGNIFICANT_DIGITS)
    if (lowest, highest, digits) != shape:
        return f"another shape: {lowest} .. {highest} µs, {digits} digits"
    return None
