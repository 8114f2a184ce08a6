"""The HTTP/2 wire format (RFC 9113 section 4 and 6): frame headers, settings, error codes.

A frame is a 9-byte header (24-bit length, type, flags, 31-bit stream id) and
its payload. :func:`frame` builds one; the client parses headers inline (see
:mod:`.client`) with :data:`unpack_header`. :func:`request_frames` pre-encodes a
request (HEADERS, CONTINUATION and DATA frames, stream id left to fill) once
for all its streams.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Final

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""The client connection preface (RFC 9113 section 3.4)."""
HEADER_SIZE: Final = 9
DEFAULT_MAX_FRAME: Final = 16384
MAX_FRAME_LIMIT: Final = (1 << 24) - 1
DEFAULT_WINDOW: Final = 65535
MAX_WINDOW: Final = (1 << 31) - 1
MAX_STREAM_ID: Final = (1 << 31) - 1

DATA: Final = 0x0
HEADERS: Final = 0x1
PRIORITY: Final = 0x2
RST_STREAM: Final = 0x3
SETTINGS: Final = 0x4
PUSH_PROMISE: Final = 0x5
PING: Final = 0x6
GOAWAY: Final = 0x7
WINDOW_UPDATE: Final = 0x8
CONTINUATION: Final = 0x9

END_STREAM: Final = 0x1
ACK: Final = 0x1
END_HEADERS: Final = 0x4
PADDED: Final = 0x8
PRIORITY_FLAG: Final = 0x20

SETTINGS_HEADER_TABLE_SIZE: Final = 0x1
SETTINGS_ENABLE_PUSH: Final = 0x2
SETTINGS_MAX_CONCURRENT_STREAMS: Final = 0x3
SETTINGS_INITIAL_WINDOW_SIZE: Final = 0x4
SETTINGS_MAX_FRAME_SIZE: Final = 0x5
SETTINGS_MAX_HEADER_LIST_SIZE: Final = 0x6

unpack_header = struct.Struct(">BHBBL").unpack_from
"""``(length >> 16, length & 0xFFFF, type, flags, stream id with its reserved bit)``."""
_pack_header = struct.Struct(">BHBBL").pack
_u32 = struct.Struct(">L")
_setting = struct.Struct(">HL")


class ErrorCode(enum.IntEnum):
    """The error codes of RST_STREAM and GOAWAY (RFC 9113 section 7)."""

    NO_ERROR = 0x0
    PROTOCOL_ERROR = 0x1
    INTERNAL_ERROR = 0x2
    FLOW_CONTROL_ERROR = 0x3
    SETTINGS_TIMEOUT = 0x4
    STREAM_CLOSED = 0x5
    FRAME_SIZE_ERROR = 0x6
    REFUSED_STREAM = 0x7
    CANCEL = 0x8
    COMPRESSION_ERROR = 0x9
    CONNECT_ERROR = 0xA
    ENHANCE_YOUR_CALM = 0xB
    INADEQUATE_SECURITY = 0xC
    HTTP_1_1_REQUIRED = 0xD


def code_name(code: int) -> str:
    """An error code's name (``REFUSED_STREAM``), or ``0x2a`` for one the RFC does not name."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"0x{code:x}"


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One frame."""
    size = len(payload)
    return _pack_header(size >> 16, size & 0xFFFF, kind, flags, stream) + payload


def settings_frame(values: dict[int, int]) -> bytes:
    """A SETTINGS frame with ``values`` (identifier -> value)."""
    return frame(SETTINGS, 0, 0, b"".join(_setting.pack(k, v) for k, v in values.items()))


def parse_settings(payload: bytes) -> list[tuple[int, int]]:
    """The ``(identifier, value)`` pairs of a SETTINGS payload (a multiple of 6 bytes)."""
    return [_setting.unpack_from(payload, pos) for pos in range(0, len(payload), 6)]


def window_update(stream: int, increment: int) -> bytes:
    """A WINDOW_UPDATE frame."""
    return frame(WINDOW_UPDATE, 0, stream, _u32.pack(increment))


def rst_stream(stream: int, code: int) -> bytes:
    """A RST_STREAM frame."""
    return frame(RST_STREAM, 0, stream, _u32.pack(code))


def goaway(last_stream: int, code: int, debug: bytes = b"") -> bytes:
    """A GOAWAY frame."""
    return frame(GOAWAY, 0, 0, _u32.pack(last_stream) + _u32.pack(code) + debug)


def u32(payload: bytes, pos: int = 0) -> int:
    """The 31-bit value at ``pos`` (the reserved bit cleared)."""
    value: int = _u32.unpack_from(payload, pos)[0]
    return value & 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class RequestFrames:
    """A request's frames, every stream id zero: ``head`` (HEADERS and any CONTINUATION)
    and ``data`` (the body's DATA frames; empty without a body).

    :meth:`for_stream` fills in a stream id; the last frame of the request has
    END_STREAM. ``body`` is the body's size (what flow control counts) and
    ``payload`` the body itself (sent in pieces when the windows are short).
    """

    head: tuple[bytes, ...]
    data: tuple[bytes, ...]
    body: int
    payload: bytes
    head_start: bytes = field(init=False)
    """The bytes of :attr:`head` before the stream id (when it is one frame)."""
    head_rest: bytes = field(init=False)
    """The bytes of :attr:`head` after the stream id (when it is one frame)."""
    simple: bool = field(init=False)
    """One HEADERS frame and no body: the client's fast path."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "head_start", self.head[0][:5])
        object.__setattr__(self, "head_rest", self.head[0][9:])
        object.__setattr__(self, "simple", len(self.head) == 1 and not self.body)

    def for_stream(self, stream: int) -> bytes:
        """The HEADERS (and CONTINUATION) frames of stream ``stream``."""
        sid = _u32.pack(stream)
        if len(self.head) == 1:
            return self.head[0][:5] + sid + self.head[0][9:]
        return b"".join(f[:5] + sid + f[9:] for f in self.head)

    def body_for_stream(self, stream: int) -> bytes:
        """The DATA frames of stream ``stream`` (the whole body)."""
        sid = _u32.pack(stream)
        return b"".join(f[:5] + sid + f[9:] for f in self.data)


def request_frames(block: bytes, body: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> RequestFrames:
    """Pre-encode a request: its header ``block`` in HEADERS (+ CONTINUATION) frames of at
    most ``max_frame`` bytes, its ``body`` in DATA frames."""
    chunks = [block[i : i + max_frame] for i in range(0, len(block), max_frame)] or [b""]
    end = 0 if body else END_STREAM
    head = [frame(HEADERS, end | (END_HEADERS if len(chunks) == 1 else 0), 0, chunks[0])]
    for position, chunk in enumerate(chunks[1:], 2):
        head.append(frame(CONTINUATION, END_HEADERS if position == len(chunks) else 0, 0, chunk))
    pieces = [body[i : i + max_frame] for i in range(0, len(body), max_frame)]
    data = tuple(
        frame(DATA, END_STREAM if position == len(pieces) else 0, 0, piece)
        for position, piece in enumerate(pieces, 1)
    )
    return RequestFrames(tuple(head), data, len(body), body)
