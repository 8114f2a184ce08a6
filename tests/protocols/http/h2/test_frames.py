"""HTTP/2 framing: our frames parsed by ``hyperframe`` (the ``h2`` package's framing), and back.

``hyperframe`` is the reference we did not write: every frame we build (SETTINGS,
WINDOW_UPDATE, RST_STREAM, GOAWAY, a pre-encoded request split into HEADERS,
CONTINUATION and DATA) parses there to the same type, flags, stream and payload,
and the frames it serializes read back through our header layout and helpers.
"""

from __future__ import annotations

import hpack
import pytest
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

from protobench.protocols.http.h2 import frames as f
from protobench.protocols.http.h2.headers import encode_request


def _parse(data: bytes) -> list[Frame]:
    """Every frame of ``data``, parsed by hyperframe."""
    out: list[Frame] = []
    while data:
        parsed, length = Frame.parse_frame_header(memoryview(data[:9]))
        parsed.parse_body(memoryview(data[9 : 9 + length]))
        out.append(parsed)
        data = data[9 + length :]
    return out


def _header(data: bytes) -> tuple[int, int, int, int]:
    """``(length, type, flags, stream)`` of the frame at the start of ``data``, our way."""
    high, low, kind, flags, stream = f.unpack_header(data)
    return (high << 16) | low, kind, flags, stream & 0x7FFFFFFF


def test_settings_and_its_ack_parse_in_hyperframe() -> None:
    values = {f.SETTINGS_ENABLE_PUSH: 0, f.SETTINGS_INITIAL_WINDOW_SIZE: 1 << 20}
    (parsed,) = _parse(f.settings_frame(values))
    assert isinstance(parsed, SettingsFrame)
    assert parsed.settings == values
    assert parsed.stream_id == 0
    (ack,) = _parse(f.frame(f.SETTINGS, f.ACK, 0))
    assert isinstance(ack, SettingsFrame)
    assert "ACK" in ack.flags
    theirs = SettingsFrame(0, settings={SettingsFrame.MAX_CONCURRENT_STREAMS: 100}).serialize()
    assert _header(theirs) == (6, f.SETTINGS, 0, 0)
    assert f.parse_settings(theirs[9:]) == [(f.SETTINGS_MAX_CONCURRENT_STREAMS, 100)]


@pytest.mark.parametrize("stream", [0, 1, f.MAX_STREAM_ID])
def test_window_update_parses_in_hyperframe(stream: int) -> None:
    (parsed,) = _parse(f.window_update(stream, f.MAX_WINDOW))
    assert isinstance(parsed, WindowUpdateFrame)
    assert (parsed.stream_id, parsed.window_increment) == (stream, f.MAX_WINDOW)


def test_rst_stream_and_goaway_carry_their_codes() -> None:
    (reset,) = _parse(f.rst_stream(7, f.ErrorCode.CANCEL))
    assert isinstance(reset, RstStreamFrame)
    assert (reset.stream_id, reset.error_code) == (7, 8)
    (away,) = _parse(f.goaway(41, f.ErrorCode.ENHANCE_YOUR_CALM, b"calm"))
    assert isinstance(away, GoAwayFrame)
    assert (away.last_stream_id, away.error_code, away.additional_data) == (41, 0xB, b"calm")
    theirs = GoAwayFrame(0, last_stream_id=9, error_code=2, additional_data=b"x").serialize()
    assert _header(theirs)[1] == f.GOAWAY
    assert (f.u32(theirs, 9), f.u32(theirs, 13), f.code_name(f.u32(theirs, 13))) == (
        9,
        2,
        "INTERNAL_ERROR",
    )
    assert f.code_name(0x2A) == "0x2a"


def test_hyperframes_headers_read_through_our_layout_with_the_reserved_bit_cleared() -> None:
    frame = DataFrame(5, data=b"hello", flags=["END_STREAM"])
    data = bytearray(frame.serialize())
    data[5] |= 0x80  # the reserved bit: a receiver ignores it
    assert _header(bytes(data)) == (5, f.DATA, f.END_STREAM, 5)
    ping = PingFrame(0, opaque_data=b"12345678", flags=["ACK"]).serialize()
    assert _header(ping) == (8, f.PING, f.ACK, 0)


def test_a_simple_request_is_one_headers_frame_with_end_stream() -> None:
    block = encode_request("GET", "http", "h:1", "/", [])
    request = f.request_frames(block, b"")
    assert request.simple
    assert request.data == ()
    (parsed,) = _parse(request.for_stream(3))
    assert isinstance(parsed, HeadersFrame)
    assert parsed.stream_id == 3
    assert parsed.flags == {"END_HEADERS", "END_STREAM"}
    assert hpack.Decoder().decode(parsed.data) == [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "h:1"),
        (":path", "/"),
    ]


def test_a_large_request_splits_into_continuation_and_data_frames() -> None:
    """A header block and a body above the frame size: HEADERS + CONTINUATION frames end
    their block once, DATA frames end the stream once, all on the stream given."""
    block = encode_request("POST", "https", "h", "/", [("x-big", "v" * 40_000)])
    body = bytes(range(256)) * 200  # 51200 bytes: four DATA frames of at most 16384
    request = f.request_frames(block, body)
    assert not request.simple
    assert request.body == len(body)
    head = _parse(request.for_stream(11))
    data = _parse(request.body_for_stream(11))
    assert [type(p) for p in head] == [HeadersFrame, ContinuationFrame, ContinuationFrame]
    assert [p.flags for p in head] == [set(), set(), {"END_HEADERS"}]
    assert hpack.Decoder().decode(b"".join(p.data for p in head))[-1] == ("x-big", "v" * 40_000)
    assert all(isinstance(p, DataFrame) for p in data)
    assert [len(p.data) for p in data] == [16384, 16384, 16384, 2048]
    assert [p.flags for p in data] == [set(), set(), set(), {"END_STREAM"}]
    assert b"".join(p.data for p in data) == body
    assert {p.stream_id for p in head + data} == {11}


def test_an_empty_header_block_is_still_one_frame() -> None:
    (parsed,) = _parse(f.request_frames(b"", b"x").for_stream(1))
    assert isinstance(parsed, HeadersFrame)
    assert parsed.flags == {"END_HEADERS"}
