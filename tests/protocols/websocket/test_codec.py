"""The client framing codecs, checked against websockets' own server-side parser."""

from __future__ import annotations

import pytest
from websockets.frames import Close, Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol

from protobench.protocols.websocket.codec import (
    OP_PING,
    ConnectionClosedByPeer,
    FastCodec,
    FrameTooLarge,
    FramingError,
)


def _server_frames(data: bytes) -> list[Frame]:
    """What websockets' server parses from client bytes (it checks the masking)."""
    server = ServerProtocol(state=State.OPEN, max_size=None)
    server.receive_data(data)
    assert server.parser_exc is None
    return [e for e in server.events_received() if isinstance(e, Frame)]


def _unmasked(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, data, fin=fin).serialize(mask=False)


class _Sink:
    def __init__(self) -> None:
        self.messages: list[tuple[bool, bytes]] = []

    def __call__(self, text: bool, data: bytes) -> None:
        self.messages.append((text, data))


@pytest.mark.parametrize("size", [0, 1, 125, 126, 200, 65535, 65536, 100_000])
def test_encoded_messages_are_masked_frames_websockets_accepts(size: int) -> None:
    codec = FastCodec(_Sink(), 1 << 24)
    payload = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    frames = _server_frames(codec.encode(payload, False) + codec.encode(b"hi", True))
    assert [(f.opcode, f.data, f.fin) for f in frames] == [
        (Opcode.BINARY, payload, True),
        (Opcode.TEXT, b"hi", True),
    ]


def test_masking_keys_differ_between_frames() -> None:
    codec = FastCodec(_Sink(), 1 << 24)
    keys = {codec.encode(b"x" * 10, False)[2:6] for _ in range(2000)}
    assert len(keys) > 1990


def test_messages_split_at_every_byte_boundary_are_reassembled() -> None:
    stream = b"".join(
        _unmasked(Opcode.BINARY, bytes([n % 256]) * n) for n in (1, 125, 126, 300, 70_000)
    ) + _unmasked(Opcode.TEXT, b"text")
    for step in (1, 2, 3, 7, 4096, len(stream)):
        sink = _Sink()
        codec = FastCodec(sink, 1 << 24)
        for start in range(0, len(stream), step):
            assert codec.feed(stream[start : start + step]) == b""
        assert [len(d) for _, d in sink.messages] == [1, 125, 126, 300, 70_000, 4]
        assert sink.messages[-1] == (True, b"text")


def test_fragmented_message_is_joined() -> None:
    sink = _Sink()
    codec = FastCodec(sink, 1 << 24)
    codec.feed(
        _unmasked(Opcode.TEXT, b"ab", fin=False)
        + _unmasked(Opcode.CONT, b"cd", fin=False)
        + _unmasked(Opcode.PING, b"!")
        + _unmasked(Opcode.CONT, b"ef")
    )
    assert sink.messages == [(True, b"abcdef")]


def test_ping_is_answered_with_a_masked_pong() -> None:
    codec = FastCodec(_Sink(), 1 << 24)
    reply = codec.feed(_unmasked(Opcode.PING, b"ping-data"))
    frames = _server_frames(reply)
    assert [(f.opcode, f.data) for f in frames] == [(Opcode.PONG, b"ping-data")]
    assert _server_frames(codec.encode_control(OP_PING, b"x"))[0].opcode is Opcode.PING


def test_close_frame_raises_with_the_reply_to_send() -> None:
    codec = FastCodec(_Sink(), 1 << 24)
    with pytest.raises(ConnectionClosedByPeer) as info:
        codec.feed(_unmasked(Opcode.CLOSE, Close(1001, "bye").serialize()))
    assert (info.value.code, info.value.reason) == (1001, "bye")
    assert "1001" in str(info.value)
    frames = _server_frames(info.value.reply)
    assert frames[0].opcode is Opcode.CLOSE
    assert Close.parse(frames[0].data).code == 1001


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (Frame(Opcode.BINARY, b"x").serialize(mask=True), "masked"),
        (bytes((0xC2, 0x01)) + b"x", "reserved bits"),
        (bytes((0x83, 0x00)), "unknown opcode"),
        (_unmasked(Opcode.CONT, b"x"), "unexpected continuation"),
        (_unmasked(Opcode.TEXT, b"a", fin=False) + _unmasked(Opcode.TEXT, b"b"), "continuation"),
    ],
)
def test_framing_errors(data: bytes, message: str) -> None:
    with pytest.raises(FramingError, match=message):
        FastCodec(_Sink(), 1 << 24).feed(data)


def test_too_big_messages_close_with_1009() -> None:
    codec = FastCodec(_Sink(), 100)
    with pytest.raises(FramingError) as info:
        codec.feed(_unmasked(Opcode.BINARY, b"x" * 101)[:4])
    assert info.value.code == 1009
    codec = FastCodec(_Sink(), 100)
    with pytest.raises(FramingError, match="fragmented"):
        codec.feed(
            _unmasked(Opcode.BINARY, b"x" * 60, fin=False) + _unmasked(Opcode.CONT, b"x" * 60)
        )


def test_a_frame_claiming_2_63_bytes_is_refused_from_its_header() -> None:
    codec = FastCodec(_Sink(), 16 << 20)
    with pytest.raises(FrameTooLarge) as info:
        codec.feed(b"\x82\x7f" + (2**63 - 1).to_bytes(8, "big"))
    assert str(info.value) == "frame length over max_size (16 MiB): 9223372036854775807 B"
    assert info.value.code == 1009
