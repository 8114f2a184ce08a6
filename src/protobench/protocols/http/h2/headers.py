"""HPACK (RFC 7541) for the HTTP/2 client: a request's header block, and a response decoder.

Requests: :func:`encode_request` encodes a request's header block once; every
stream sends the same bytes. Fields are literals *without indexing* (names from
the static table where it has them, no Huffman coding), so the block never
touches the server's dynamic table and is valid in any order and on any
connection.

Responses: :class:`HeaderDecoder` keeps the dynamic table the server's encoder
writes to and decodes every header block, as the protocol requires. Servers of
benchmarks send the same block again and again, so a block's decoding is kept
(:meth:`HeaderDecoder.status`): the same bytes decode to the same fields when
they refer to no dynamic entry, or when the dynamic table has not changed since
(its *generation*); the entries such a block inserts are inserted again, so the
table stays what the server's is. Any other block is decoded in full (Huffman
strings by the ``hpack`` package's decoder).

Limits: a header list larger than ``max_list`` bytes (RFC 7541 section 4.1
sizes: name + value + 32 each) or a malformed block raises
:class:`HpackError`, a connection error (``COMPRESSION_ERROR``) for the
caller; a table size update above the size we allowed (``max_table``) too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from hpack.exceptions import HPACKDecodingError
from hpack.huffman_table import decode_huffman
from hpack.table import HeaderTable

from protobench.vocab.exceptions import Incomplete

STATIC = HeaderTable.STATIC_TABLE
"""RFC 7541 appendix A: index 1 is ``STATIC[0]``."""
STATIC_LENGTH = len(STATIC)
ENTRY_OVERHEAD = 32
DEFAULT_TABLE_SIZE = 4096
CACHE_ENTRIES = 64
"""Decoded blocks kept; the cache starts over when it is full (a server varying its
headers on every response gets the full decoder, nothing grows)."""
_STATIC_NAMES = {name: index for index, (name, _) in reversed(list(enumerate(STATIC, 1)))}
_STATIC_PAIRS = {pair: index for index, pair in enumerate(STATIC, 1)}
FORBIDDEN = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"}
)
"""Connection-specific header names HTTP/2 forbids (RFC 9113 section 8.2.2); ``host``
becomes ``:authority``."""

Header = tuple[bytes, bytes]


class HpackError(Incomplete):
    """A header block that cannot be decoded (a ``COMPRESSION_ERROR`` of the connection)."""


def encode_integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """An HPACK integer with an ``prefix_bits``-bit prefix; ``first`` holds the leading bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _literal(data: bytes) -> bytes:
    return encode_integer(len(data), 7) + data


def encode_request(
    method: str, scheme: str, authority: str, path: str, headers: Iterable[tuple[str, str]]
) -> bytes:
    """The header block of a request: pseudo-headers first, then ``headers`` (names lowercased).

    Fields in the static table with their value are indexed (``:method GET``,
    ``:scheme https``, ``:path /``); the others are literals without indexing.
    Raises ``ValueError`` for a connection-specific header (RFC 9113 section 8.2.2).
    """
    fields: list[Header] = [
        (b":method", method.encode("ascii")),
        (b":scheme", scheme.encode("ascii")),
        (b":authority", authority.encode("ascii")),
        (b":path", path.encode("ascii")),
    ]
    for name, value in headers:
        lowered = name.lower()
        if lowered in FORBIDDEN:
            raise ValueError(
                f"header {name!r} has no place in HTTP/2 (RFC 9113 section 8.2.2): "
                "the connection is the protocol's; remove it"
                + (" (:authority comes from the target URL)" if lowered == "host" else "")
            )
        if lowered == "te" and value.strip().lower() != "trailers":
            raise ValueError("header 'te' may only be 'trailers' in HTTP/2")
        fields.append((lowered.encode("ascii"), value.encode("latin-1")))
    out = bytearray()
    for key, data in fields:
        index = _STATIC_PAIRS.get((key, data))
        if index is not None:
            out += encode_integer(index, 7, 0x80)
            continue
        name_index = _STATIC_NAMES.get(key, 0)
        out += encode_integer(name_index, 4)
        if not name_index:
            out += _literal(key)
        out += _literal(data)
    return bytes(out)


def _integer(block: bytes, pos: int, prefix_bits: int) -> tuple[int, int]:
    """Decode an integer whose prefix is in ``block[pos]``; return it and the next position."""
    limit = (1 << prefix_bits) - 1
    value = block[pos] & limit
    pos += 1
    if value < limit:
        return value, pos
    shift = 0
    end = len(block)
    while True:
        if pos >= end:
            raise HpackError("header block: an integer runs past its end")
        byte = block[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise HpackError("header block: an integer longer than 2**32")


def _string(block: bytes, pos: int) -> tuple[bytes, int]:
    huffman = block[pos] & 0x80
    length, pos = _integer(block, pos, 7)
    end = pos + length
    if end > len(block):
        raise HpackError("header block: a string runs past its end")
    raw = block[pos:end]
    if huffman:
        try:
            raw = decode_huffman(raw)
        except HPACKDecodingError as exc:
            raise HpackError(f"header block: bad Huffman string ({exc})") from None
    return raw, end


class _Decoded:
    """One block's decoding: what it says, what it does to the table, what it depends on."""

    __slots__ = ("fixed_at", "generation", "headers", "hits", "inserts", "refers", "status")

    def __init__(
        self, headers: list[Header], inserts: list[Header], refers: bool, generation: int
    ) -> None:
        self.headers = headers
        self.inserts = inserts
        self.refers = refers
        self.generation = generation
        self.fixed_at = -1
        """The table generation on which inserting :attr:`inserts` again changes nothing."""
        self.hits = 0
        self.status = 0
        if headers and headers[0][0] == b":status":
            value = headers[0][1]
            if len(value) == 3 and value.isdigit():
                self.status = int(value)


class HeaderDecoder:
    """The decoding side of one connection's HPACK context (see the module)."""

    def __init__(self, max_table: int = DEFAULT_TABLE_SIZE, max_list: int = 65536) -> None:
        self.max_table = max_table
        """The largest table size the server may set (our SETTINGS_HEADER_TABLE_SIZE)."""
        self.max_list = max_list
        self._table: deque[Header] = deque()
        self._table_size = 0
        self._table_limit = max_table
        self._generation = 0
        self._cache: dict[bytes, _Decoded] = {}

    @property
    def table(self) -> list[Header]:
        """The dynamic table, newest entry first (for tests)."""
        return list(self._table)

    def status(self, block: bytes) -> int:
        """Decode ``block`` (updating the table); return its ``:status`` (0 if it has none)."""
        return self._decoded(block).status

    def decode(self, block: bytes) -> list[Header]:
        """Decode ``block`` (updating the table); return its fields in order."""
        return self._decoded(block).headers

    def _decoded(self, block: bytes) -> _Decoded:
        cache = self._cache
        found = cache.get(block)
        if found is not None and (not found.refers or found.generation == self._generation):
            if found.inserts and found.fixed_at != self._generation:
                self._insert_again(found)
            return found
        decoded = self._full(block)
        if len(cache) >= CACHE_ENTRIES:
            cache.clear()
        cache[block] = decoded
        return decoded

    def _insert_again(self, found: _Decoded) -> None:
        """Insert a cached block's entries again.

        A server that inserts the same entries with every response fills the
        table with them until inserting them again changes nothing (the entries
        evicted are the ones inserted). Every 16th time the table is compared
        before and after: once unchanged, the block's entries are known to be a
        no-op on this table (its generation) and are skipped until it changes.
        """
        found.hits += 1
        generation = self._generation
        before = tuple(self._table) if not found.hits & 15 else None
        add = self._add
        for name, value in found.inserts:
            add(name, value)
        if before is not None and tuple(self._table) == before:
            self._generation = found.fixed_at = generation

    def _full(self, block: bytes) -> _Decoded:
        headers: list[Header] = []
        inserts: list[Header] = []
        refers = False
        total = 0
        pos = 0
        end = len(block)
        generation = self._generation
        while pos < end:
            byte = block[pos]
            if byte & 0x80:  # indexed field
                index, pos = _integer(block, pos, 7)
                refers |= index > STATIC_LENGTH
                name, value = self._entry(index)
            elif byte & 0x40:  # literal with incremental indexing
                index, pos = _integer(block, pos, 6)
                if index:
                    refers |= index > STATIC_LENGTH
                    name = self._entry(index)[0]
                else:
                    name, pos = _string(block, pos)
                value, pos = _string(block, pos)
                self._add(name, value)
                inserts.append((name, value))
            elif byte & 0x20:  # dynamic table size update
                if headers:
                    raise HpackError("header block: a table size update after a field")
                size, pos = _integer(block, pos, 5)
                if size > self.max_table:
                    raise HpackError(
                        f"header block: table size {size} above the {self.max_table} allowed"
                    )
                self._table_limit = size
                self._evict(0)
                refers = True  # not cached: the update is state of its own
                continue
            else:  # literal without indexing (0x00) or never indexed (0x10)
                index, pos = _integer(block, pos, 4)
                if index:
                    refers |= index > STATIC_LENGTH
                    name = self._entry(index)[0]
                else:
                    name, pos = _string(block, pos)
                value, pos = _string(block, pos)
            total += len(name) + len(value) + ENTRY_OVERHEAD
            if total > self.max_list:
                raise HpackError(f"header list larger than {self.max_list} bytes")
            headers.append((name, value))
        return _Decoded(headers, inserts, refers, generation if refers else 0)

    def _entry(self, index: int) -> Header:
        if 0 < index <= STATIC_LENGTH:
            return STATIC[index - 1]
        dynamic = index - STATIC_LENGTH - 1
        if index == 0 or dynamic >= len(self._table):
            raise HpackError(f"header block: no table entry {index}")
        return self._table[dynamic]

    def _add(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value) + ENTRY_OVERHEAD
        self._generation += 1
        if size > self._table_limit:
            self._table.clear()
            self._table_size = 0
            return
        self._evict(size)
        self._table.appendleft((name, value))
        self._table_size += size

    def _evict(self, room: int) -> None:
        table = self._table
        while table and self._table_size + room > self._table_limit:
            name, value = table.pop()
            self._table_size -= len(name) + len(value) + ENTRY_OVERHEAD
        self._generation += 1
