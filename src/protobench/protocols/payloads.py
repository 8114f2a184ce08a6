"""Payload sizes (fixed or a weighted mix) and tagged payloads that echoes can be checked against.

A size spec is a byte count (``200``, ``"1KiB"``) or a weighted mix
``"25:30%, 200:30%, 800:25%, 1400:15%"`` (``SIZE:WEIGHT``; weights in percent
must add up to 100%, bare weights are relative). :data:`PayloadSize` is the
pydantic type that parses either form into a :class:`SizeMix`.

:class:`TaggedPayloads` builds the payloads of one sender. Each payload starts
with a tag, the sender id (the session's "worker id") and a sequence number,
followed by a filler that is a pure function of the tag. So the expected bytes
of any reply can be rebuilt from its tag alone and compared byte for byte,
whether one or many messages are in flight. The size of message ``seq`` comes
from a table that holds every mix entry in its exact proportion per
:data:`TABLE_SIZE` consecutive messages, shuffled with a fixed seed, so runs
are reproducible and short runs already follow the mix.

Binary payloads carry a 12-byte tag (``>IQ``: sender, sequence); text payloads
carry 24 hex digits and an ASCII filler, so they are valid UTF-8.
"""

from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BeforeValidator, PlainSerializer

from protobench.vocab import units

Mode = Literal["binary", "text"]

TABLE_SIZE = 1000
BINARY_TAG = struct.Struct(">IQ")
TEXT_TAG_LEN = 24
_FILLER_PERIOD = 251
_TEXT_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
MAX_SIZE = 256 * 1024 * 1024


def parse_size(value: str | int) -> int:
    """Bytes of one payload (:func:`~protobench.vocab.units.parse_size`), at most 256 MiB."""
    return units.parse_size(value, MAX_SIZE)


@dataclass(frozen=True)
class SizeMix:
    """Payload sizes with their weights (fractions adding up to 1)."""

    entries: tuple[tuple[int, float], ...]

    @property
    def min_size(self) -> int:
        return min(size for size, _ in self.entries)

    @property
    def max_size(self) -> int:
        return max(size for size, _ in self.entries)

    @property
    def mean_size(self) -> float:
        return sum(size * weight for size, weight in self.entries)

    def table(self) -> tuple[int, ...]:
        """:data:`TABLE_SIZE` sizes in the mix's proportions (largest remainder), shuffled."""
        quotas = [weight * TABLE_SIZE for _, weight in self.entries]
        counts = [int(q) for q in quotas]
        by_remainder = sorted(range(len(quotas)), key=lambda i: quotas[i] - counts[i], reverse=True)
        for i in by_remainder[: TABLE_SIZE - sum(counts)]:
            counts[i] += 1
        sizes = [size for (size, _), n in zip(self.entries, counts, strict=True) for _ in range(n)]
        random.Random(TABLE_SIZE).shuffle(sizes)
        return tuple(sizes)

    def __str__(self) -> str:
        if len(self.entries) == 1:
            return str(self.entries[0][0])
        return ", ".join(f"{size}:{weight * 100:g}%" for size, weight in self.entries)


def parse_mix(value: str | int | SizeMix) -> SizeMix:
    """A :class:`SizeMix` from a size or a ``"SIZE:WEIGHT, ..."`` mix."""
    if isinstance(value, SizeMix):
        return value
    if not isinstance(value, str) or ":" not in value:
        return SizeMix(((parse_size(value), 1.0),))
    entries: list[tuple[int, float]] = []
    percent = []
    for item in value.split(","):
        size_text, sep, weight_text = item.partition(":")
        if not sep or not weight_text.strip():
            raise ValueError(f"expected SIZE:WEIGHT items such as '200:30%', got {item.strip()!r}")
        weight_text = weight_text.strip()
        percent.append(weight_text.endswith("%"))
        try:
            weight = float(weight_text.removesuffix("%"))
        except ValueError:
            raise ValueError(
                f"expected a weight such as '30%' or '3', got {weight_text!r}"
            ) from None
        if not 0 < weight < math.inf:
            raise ValueError(f"expected a weight > 0, got {weight_text!r}")
        entries.append((parse_size(size_text), weight))
    if any(percent) and not all(percent):
        raise ValueError("give every weight in percent, or none")
    total = sum(weight for _, weight in entries)
    if all(percent) and abs(total - 100.0) > 1e-6:
        raise ValueError(f"percentages must add up to 100%, got {total:g}%")
    return SizeMix(tuple((size, weight / total) for size, weight in entries))


PayloadSize = Annotated[SizeMix, BeforeValidator(parse_mix), PlainSerializer(str, return_type=str)]
"""A profile value: a fixed size (``200``) or a weighted mix (``"25:30%, 200:70%"``)."""


def tag_length(mode: Mode) -> int:
    """Bytes taken by the tag at the start of every payload."""
    return BINARY_TAG.size if mode == "binary" else TEXT_TAG_LEN


def check_mix(mix: SizeMix, mode: Mode, max_size: int | None = None) -> None:
    """Raise ``ValueError`` when a size cannot carry the tag or exceeds ``max_size``."""
    if mix.min_size < tag_length(mode):
        raise ValueError(
            f"payload size {mix.min_size} B is smaller than the {mode} tag ({tag_length(mode)} B)"
        )
    if max_size is not None and mix.max_size > max_size:
        raise ValueError(f"payload size {mix.max_size} B exceeds the maximum of {max_size} B")


class TaggedPayloads:
    """The payloads of one sender: ``build(seq)`` and the inverse checks."""

    __slots__ = ("_filler", "_offset", "_sizes", "mode", "source", "tag_len")

    def __init__(self, source: int, mix: SizeMix, mode: Mode = "binary") -> None:
        check_mix(mix, mode)
        self.source = source & 0xFFFFFFFF
        self.mode: Mode = mode
        self.tag_len = tag_length(mode)
        self._sizes = mix.table()
        self._offset = (self.source * 7919) % TABLE_SIZE
        rng = random.Random(self.source)
        length = mix.max_size + _FILLER_PERIOD
        if mode == "binary":
            self._filler = rng.randbytes(length)
        else:
            self._filler = bytes(rng.choice(_TEXT_ALPHABET) for _ in range(length))

    def size(self, seq: int) -> int:
        """Size in bytes of payload ``seq``."""
        return self._sizes[(seq + self._offset) % TABLE_SIZE]

    def tag(self, seq: int) -> bytes:
        if self.mode == "binary":
            return BINARY_TAG.pack(self.source, seq)
        return b"%08x%016x" % (self.source, seq)

    def build(self, seq: int) -> bytes:
        """Payload ``seq``: tag, then a filler determined by (source, seq)."""
        start = seq % _FILLER_PERIOD
        return self.tag(seq) + self._filler[start : start + self.size(seq) - self.tag_len]

    def read_tag(self, data: bytes, offset: int = 0) -> tuple[int, int] | None:
        """(source, seq) of a payload starting at ``offset``, or ``None`` if it has no tag."""
        end = offset + self.tag_len
        if len(data) < end:
            return None
        if self.mode == "binary":
            source, seq = BINARY_TAG.unpack_from(data, offset)
            return int(source), int(seq)
        try:
            return int(data[offset : offset + 8], 16), int(data[offset + 8 : end], 16)
        except ValueError:
            return None

    def matches(self, data: bytes, seq: int, offset: int = 0) -> bool:
        """Whether ``data[offset:]`` is exactly payload ``seq``."""
        expected = self.build(seq)
        return len(data) - offset == len(expected) and data.startswith(expected, offset)
