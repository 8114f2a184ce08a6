"""Payload size specs, the proportion table and tagged payloads."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from protobench.protocols.base import StrictModel
from protobench.protocols.payloads import (
    TABLE_SIZE,
    PayloadSize,
    SizeMix,
    TaggedPayloads,
    check_mix,
    parse_mix,
    parse_size,
)

SC_MIX = "25:30%, 200:30%, 800:25%, 1400:15%"


class _Model(StrictModel):
    payload: PayloadSize


@pytest.mark.parametrize(
    ("text", "expected"),
    [(200, 200), ("200", 200), ("200B", 200), ("1k", 1000), ("2kB", 2000), ("1KiB", 1024)],
)
def test_parse_size(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "x", "-5", "1.5k", "300MB", "1GiB", True])
def test_parse_size_rejects(text: str | int) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_mix_in_percent() -> None:
    mix = parse_mix(SC_MIX)
    assert mix.entries == ((25, 0.3), (200, 0.3), (800, 0.25), (1400, 0.15))
    assert (mix.min_size, mix.max_size) == (25, 1400)
    assert mix.mean_size == pytest.approx(25 * 0.3 + 200 * 0.3 + 800 * 0.25 + 1400 * 0.15)
    assert str(mix) == "25:30%, 200:30%, 800:25%, 1400:15%"


def test_relative_weights_are_normalised() -> None:
    assert parse_mix("100:1, 300:3").entries == ((100, 0.25), (300, 0.75))


def test_fixed_size_is_a_mix_of_one() -> None:
    assert parse_mix(200) == SizeMix(((200, 1.0),))
    assert parse_mix("1KiB").entries == ((1024, 1.0),)
    assert str(parse_mix(200)) == "200"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("25:30%, 200:60%", "add up to 100%"),
        ("25:30%, 200:7", "every weight in percent"),
        ("25:, 200:100%", "SIZE:WEIGHT"),
        ("25:abc", "weight"),
        ("25:0%, 200:100%", "weight > 0"),
        ("x:50%, 200:50%", "size"),
    ],
)
def test_bad_mixes_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_mix(text)


def test_pydantic_type_parses_and_serialises() -> None:
    model = _Model.model_validate({"payload": SC_MIX})
    assert model.payload.max_size == 1400
    assert model.model_dump() == {"payload": SC_MIX}
    with pytest.raises(ValidationError, match="100%"):
        _Model.model_validate({"payload": "25:50%"})


def test_table_holds_the_exact_proportions_shuffled() -> None:
    table = parse_mix(SC_MIX).table()
    assert len(table) == TABLE_SIZE
    assert Counter(table) == {25: 300, 200: 300, 800: 250, 1400: 150}
    assert table[:4] != (25, 25, 25, 25) or table[300:304] != (200, 200, 200, 200)
    assert parse_mix("1:1, 2:1, 3:1").table().count(1) in (333, 334)


def test_sizes_follow_the_mix_over_consecutive_messages() -> None:
    payloads = TaggedPayloads(7, parse_mix(SC_MIX))
    sizes = Counter(len(payloads.build(seq)) for seq in range(1, TABLE_SIZE + 1))
    assert sizes == {25: 300, 200: 300, 800: 250, 1400: 150}


def test_binary_payload_tag_and_determinism() -> None:
    payloads = TaggedPayloads(42, parse_mix(200))
    data = payloads.build(12345)
    assert len(data) == 200
    assert payloads.read_tag(data) == (42, 12345)
    assert TaggedPayloads(42, parse_mix(200)).build(12345) == data
    assert payloads.build(12346) != data
    assert TaggedPayloads(43, parse_mix(200)).build(12345) != data
    assert payloads.matches(data, 12345)
    assert payloads.matches(b"ECHO:" + data, 12345, offset=5)
    assert payloads.read_tag(b"ECHO:" + data, 5) == (42, 12345)


def test_any_changed_byte_fails_the_match() -> None:
    payloads = TaggedPayloads(1, parse_mix(64))
    data = payloads.build(9)
    for position in range(len(data)):
        changed = bytearray(data)
        changed[position] ^= 0x01
        assert not payloads.matches(bytes(changed), 9), position
    assert not payloads.matches(data[:-1], 9)
    assert not payloads.matches(data + b"x", 9)


def test_text_payloads_are_ascii_with_a_hex_tag() -> None:
    payloads = TaggedPayloads(3, parse_mix(SC_MIX), "text")
    for seq in range(1, 50):
        data = payloads.build(seq)
        data.decode("ascii")
        assert payloads.read_tag(data) == (3, seq)
        assert data[:24] == b"%08x%016x" % (3, seq)
    assert payloads.read_tag(b"zz" * 20) is None
    assert payloads.read_tag(b"short") is None


def test_sizes_smaller_than_the_tag_are_refused() -> None:
    with pytest.raises(ValueError, match="smaller than the binary tag"):
        TaggedPayloads(0, parse_mix(11))
    with pytest.raises(ValueError, match="smaller than the text tag"):
        check_mix(parse_mix("20:50%, 200:50%"), "text")
    with pytest.raises(ValueError, match="exceeds the maximum"):
        check_mix(parse_mix(1500), "binary", max_size=1492)
