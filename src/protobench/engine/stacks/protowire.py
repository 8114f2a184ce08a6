"""The protocol buffers wire format, as much as pprof's ``profile.proto`` needs.

:func:`fields` reads a message as ``(number, wire type, value)`` (an int for
a varint or fixed field, bytes for a length-delimited one); :class:`Writer`
writes one. Reading is bounded by the bytes given (a truncated or malformed
message is a :class:`WireError`), and nothing nests deeper than the caller
asks for.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from protobench.vocab.exceptions import Incomplete

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


class WireError(Incomplete, ValueError):
    """Bytes that are not a protocol buffers message."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise WireError("a varint runs past the end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise WireError("a varint longer than 10 bytes")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Each field of a message: its number, wire type and value."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        value: int | bytes
        if kind == VARINT:
            value, at = _varint(data, at)
        elif kind == FIXED64:
            if at + 8 > len(data):
                raise WireError("a fixed64 runs past the end")
            value = struct.unpack_from("<Q", data, at)[0]
            at += 8
        elif kind == FIXED32:
            if at + 4 > len(data):
                raise WireError("a fixed32 runs past the end")
            value = struct.unpack_from("<I", data, at)[0]
            at += 4
        elif kind == BYTES:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise WireError("a length-delimited field runs past the end")
            value = data[at : at + size]
            at += size
        else:
            raise WireError(f"unknown wire type {kind}")
        yield number, kind, value


def varints(value: int | bytes) -> list[int]:
    """A repeated integer field's values: one varint, or a packed run of them."""
    if isinstance(value, int):
        return [value]
    out, at = [], 0
    while at < len(value):
        item, at = _varint(value, at)
        out.append(item)
    return out


def signed(value: int) -> int:
    """An int64 read as a varint (two's complement over 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value


class Writer:
    """A message written field by field (:meth:`bytes` gives it)."""

    def __init__(self) -> None:
        self._out = bytearray()

    def _raw_varint(self, value: int) -> None:
        value &= (1 << 64) - 1
        while value > 0x7F:
            self._out.append((value & 0x7F) | 0x80)
            value >>= 7
        self._out.append(value)

    def varint(self, number: int, value: int) -> Writer:
        if value:
            self._raw_varint(number << 3 | VARINT)
            self._raw_varint(value)
        return self

    def bytes_(self, number: int, value: bytes) -> Writer:
        self._raw_varint(number << 3 | BYTES)
        self._raw_varint(len(value))
        self._out += value
        return self

    def packed(self, number: int, values: list[int]) -> Writer:
        inner = Writer()
        for value in values:
            inner._raw_varint(value)
        return self.bytes_(number, inner.bytes())

    def bytes(self) -> bytes:
        return bytes(self._out)
