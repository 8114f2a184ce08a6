"""Client identifiers every broker accepts: ``[0-9a-zA-Z]``, at most 23 bytes.

MQTT 3.1.1 (MQTT-3.1.3-5) obliges a broker to accept only identifiers of 1 to
23 bytes made of ``0-9a-zA-Z``; strict brokers refuse the rest with CONNACK
0x02. A session's identifier is ``prefix + name + "x" + index``: ``name`` is
the group name's letters and digits, cut to fit 23 bytes, with a two-character
tag of the whole name when anything was dropped (so ``sub-a`` and ``suba`` or
two long names with one beginning stay apart); the index is the session's
index in its group, after the letter ``x``, so identifiers of two groups never
meet. A prefix with other characters, or too long for 23 bytes, is the user's
choice and is kept as given.
"""

from __future__ import annotations

import string
import zlib
from typing import Final

MAX_LENGTH: Final = 23
ALPHABET: Final = string.digits + string.ascii_letters


def _tag(name: str) -> str:
    """Two characters of ``ALPHABET`` derived from ``name`` (3,844 values)."""
    value = zlib.crc32(name.encode()) % (len(ALPHABET) ** 2)
    return ALPHABET[value // len(ALPHABET)] + ALPHABET[value % len(ALPHABET)]


def client_id(prefix: str, group: str, index: int) -> str:
    """The identifier of session ``index`` of ``group`` (see the module docstring)."""
    suffix = f"x{index}"
    room = max(0, MAX_LENGTH - len(prefix.encode()) - len(suffix))
    name = "".join(c for c in group if c in ALPHABET)
    if name != group or len(name) > room:
        name = name[: max(0, room - 2)] + _tag(group)
    return f"{prefix}{name}{suffix}"
