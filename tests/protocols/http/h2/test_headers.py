"""HPACK: our request blocks read by the ``hpack`` package, its blocks read by our decoder.

The ``hpack`` package (an implementation we did not write) is the reference:
whatever its encoder writes (Huffman strings, incremental indexing, references
to the dynamic table, table size updates) our decoder reads to the same fields
with the same dynamic table, also when blocks repeat and come from the cache.
"""

from __future__ import annotations

import random

import hpack
import pytest

from protobench.protocols.http.h2.headers import (
    HeaderDecoder,
    HpackError,
    encode_integer,
    encode_request,
)

NGINX = [
    (b":status", b"200"),
    (b"server", b"nginx/1.22.1"),
    (b"date", b"Sat, 28 Nov 2026 11:53:11 GMT"),
    (b"content-type", b"text/plain"),
    (b"content-length", b"13"),
]


def _table(encoder: hpack.Encoder) -> list[tuple[bytes, bytes]]:
    return [(bytes(n), bytes(v)) for n, v in encoder.header_table.dynamic_entries]


def test_a_request_block_reads_back_with_hpack_and_leaves_its_table_empty() -> None:
    block = encode_request(
        "POST", "https", "example.com:8443", "/api?x=1", [("X-Token", "abc"), ("Accept", "*/*")]
    )
    decoder = hpack.Decoder()
    assert decoder.decode(block, raw=True) == [
        (b":method", b"POST"),
        (b":scheme", b"https"),
        (b":authority", b"example.com:8443"),
        (b":path", b"/api?x=1"),
        (b"x-token", b"abc"),
        (b"accept", b"*/*"),
    ]
    assert not decoder.header_table.dynamic_entries  # literals without indexing only


@pytest.mark.parametrize("name", ["Connection", "keep-alive", "Transfer-Encoding", "Host"])
def test_connection_specific_headers_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"RFC 9113"):
        encode_request("GET", "http", "h", "/", [(name, "x")])


def test_te_other_than_trailers_is_refused() -> None:
    with pytest.raises(ValueError, match="trailers"):
        encode_request("GET", "http", "h", "/", [("TE", "gzip")])
    assert encode_request("GET", "http", "h", "/", [("TE", "trailers")])


@pytest.mark.parametrize("seed", range(5))
def test_blocks_of_the_hpack_encoder_decode_alike_with_the_same_table(seed: int) -> None:
    """Random responses, some repeated (the cache), some new (the full decoder)."""
    rng = random.Random(seed)
    encoder = hpack.Encoder()
    ours = HeaderDecoder()
    names = [b"server", b"date", b"x-a", b"x-b", b"content-type", b"set-cookie", b"etag"]
    pool = [
        [(b":status", rng.choice([b"200", b"204", b"404", b"503"]))]
        + [(rng.choice(names), str(rng.randrange(10 ** rng.randrange(1, 40))).encode())]
        * rng.randrange(0, 4)
        for _ in range(20)
    ]
    for _ in range(400):
        fields = rng.choice(pool)
        if rng.random() < 0.02:
            encoder.header_table_size = rng.choice([0, 256, 4096])
        block = encoder.encode(fields, huffman=rng.random() < 0.7)
        assert ours.decode(block) == fields
        assert ours.table == _table(encoder)
    assert ours.status(encoder.encode(NGINX)) == 200


def test_repeated_insertions_are_skipped_only_while_they_change_nothing() -> None:
    """nginx inserts server, date and content-type with every response: once the table is
    full of them, inserting them again is a no-op, and a change of table is seen."""
    encoder = hpack.Encoder()
    ours = HeaderDecoder()
    for _ in range(100):
        assert ours.status(encoder.encode(NGINX)) == 200
        assert ours.table == _table(encoder)
    other = [(b":status", b"404"), (b"x-new", b"1")]
    assert ours.decode(encoder.encode(other)) == other
    for _ in range(40):
        assert ours.decode(encoder.encode(NGINX)) == NGINX
        assert ours.table == _table(encoder)


def test_references_to_the_dynamic_table_follow_its_changes() -> None:
    """A server that indexes once and refers afterwards (as Go's does) sends the same bytes
    that mean other fields once the table changed: the cache must not answer then."""
    ours = HeaderDecoder()
    first = bytes([0x88, 0x40]) + bytes([1]) + b"x" + bytes([1]) + b"1"  # :status 200, x: 1
    refer = bytes([0x88, 0xBE])  # :status 200, entry 62
    assert ours.decode(first) == [(b":status", b"200"), (b"x", b"1")]
    assert ours.decode(refer) == [(b":status", b"200"), (b"x", b"1")]
    ours.decode(bytes([0x40, 1]) + b"y" + bytes([1]) + b"2")  # a new entry 62
    assert ours.decode(refer) == [(b":status", b"200"), (b"y", b"2")]


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (bytes([0x80]), "no table entry 0"),
        (bytes([0xBE]), "no table entry 62"),
        (bytes([0x0F]), "integer runs past"),
        (bytes([0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]), "longer than"),
        (bytes([0x00, 0x05]) + b"ab", "string runs past"),
        (bytes([0x88, 0x3F, 0xE1, 0x1F]), "table size update after a field"),
        (bytes([0x3F, 0xE1, 0x7F]), "above the 4096 allowed"),
        (bytes([0x00, 0x81, 0xFF, 0x01]) + b"v", "bad Huffman"),
    ],
)
def test_malformed_blocks_are_errors(block: bytes, message: str) -> None:
    with pytest.raises(HpackError, match=message):
        HeaderDecoder().decode(block)


def test_a_header_list_above_the_limit_is_an_error_before_it_is_kept() -> None:
    decoder = HeaderDecoder(max_list=1000)
    value = b"v" * 600
    block = bytes([0x00, 1]) + b"a" + encode_integer(600, 7) + value
    decoder.decode(block)
    with pytest.raises(HpackError, match="larger than 1000"):
        decoder.decode(block + block)
