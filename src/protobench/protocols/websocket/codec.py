"""Client-side WebSocket message framing after the opening handshake.

Two codecs with one interface: ``encode(payload, text)`` returns the bytes of
one masked message; ``feed(data)`` parses received bytes, hands each complete
message to ``on_message(text, payload)`` and returns bytes to write back
(pongs, the close reply); a close frame from the server or a framing error
raises :class:`ConnectionClosedByPeer` or :class:`FramingError` (:class:`FrameTooLarge`
for a frame, a fragmented message or an inflated message over ``max_size``, read
from the frame's header: nothing of it is buffered).

:class:`FastCodec` is the hot path when no extension was negotiated: RFC 6455
framing on a ``bytearray`` with websockets' C ``apply_mask`` and masking keys
taken 4 bytes at a time from one ``os.urandom`` batch. It runs about three
times faster here than websockets' own sans-I/O parser, which the generator
measures as the load. It does not validate UTF-8 in text messages: replies are
compared byte for byte anyway.

:class:`SansIOCodec` drives websockets' :class:`~websockets.client.ClientProtocol`
and serves every connection that negotiated an extension (permessage-deflate).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from websockets.client import ClientProtocol
from websockets.exceptions import PayloadTooBig, ProtocolError
from websockets.frames import Close, Frame, Opcode
from websockets.speedups import apply_mask

from protobench.vocab.exceptions import Incomplete
from protobench.vocab.units import format_size

OnMessage = Callable[[bool, bytes], None]

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_U16 = struct.Struct(">H")
_U64 = struct.Struct(">Q")
_KEY_BATCH = 4096


class FramingError(Incomplete):
    """The server broke the framing rules; ``code`` is the close code to send."""

    def __init__(self, message: str, code: int = 1002) -> None:
        super().__init__(message)
        self.code = code


class FrameTooLarge(FramingError):
    """A frame or message longer than ``max_size`` (close code 1009)."""

    def __init__(self, what: str, max_size: int, size: int | None = None) -> None:
        of = f": {size} B" if size is not None else ""
        super().__init__(f"{what} over max_size ({format_size(max_size)}){of}", 1009)


class ConnectionClosedByPeer(Incomplete):
    """The server sent a close frame; ``reply`` is the close frame to send back."""

    def __init__(self, code: int, reason: str, reply: bytes) -> None:
        super().__init__(f"server closed the connection ({code}{' ' + reason if reason else ''})")
        self.code = code
        self.reason = reason
        self.reply = reply


def _header(opcode: int, length: int) -> bytes:
    if length < 126:
        return bytes((0x80 | opcode, 0x80 | length))
    if length < 65536:
        return bytes((0x80 | opcode, 0xFE)) + _U16.pack(length)
    return bytes((0x80 | opcode, 0xFF)) + _U64.pack(length)


_DATA_HEADERS: dict[int, bytes] = {}
"""Headers of data frames below 64 KiB by ``length << 1 | text``, filled as met."""


def _data_header(length: int, text: bool) -> bytes:
    header = _header(OP_TEXT if text else OP_BINARY, length)
    if length < 65536:
        _DATA_HEADERS[length << 1 | text] = header
    return header


class FastCodec:
    """RFC 6455 client framing without extensions."""

    __slots__ = (
        "_buf",
        "_frag",
        "_frag_text",
        "_key_pos",
        "_keys",
        "_need",
        "max_size",
        "on_message",
    )

    def __init__(self, on_message: OnMessage, max_size: int) -> None:
        self.on_message = on_message
        self.max_size = max_size
        self._buf = bytearray()
        self._need = 0
        self._keys = b""
        self._key_pos = _KEY_BATCH
        self._frag: list[bytes] | None = None
        self._frag_text = False

    def _key(self) -> bytes:
        pos = self._key_pos
        if pos >= _KEY_BATCH:
            self._keys = os.urandom(_KEY_BATCH)
            pos = 0
        self._key_pos = pos + 4
        return self._keys[pos : pos + 4]

    def encode(self, payload: bytes, text: bool) -> bytes:
        pos = self._key_pos
        if pos >= _KEY_BATCH:
            self._keys = os.urandom(_KEY_BATCH)
            pos = 0
        self._key_pos = pos + 4
        key = self._keys[pos : pos + 4]
        length = len(payload)
        header = _DATA_HEADERS.get(length << 1 | text) or _data_header(length, text)
        return header + key + apply_mask(payload, key)

    def encode_control(self, opcode: int, payload: bytes) -> bytes:
        key = self._key()
        return _header(opcode, len(payload)) + key + apply_mask(payload, key)

    def feed(self, data: bytes) -> bytes:
        if self._buf:
            self._buf += data
            if len(self._buf) < self._need:
                return b""
            buf = bytes(self._buf)
            self._buf.clear()
        else:
            buf = data
        replies = b""
        pos = 0
        size = len(buf)
        while size - pos >= 2:
            b0 = buf[pos]
            length = buf[pos + 1]
            if length & 0x80:
                raise FramingError("the server masked a frame")
            if b0 & 0x70:
                raise FramingError("reserved bits set without a negotiated extension")
            length &= 0x7F
            head = 2
            if length == 126:
                if size - pos < 4:
                    self._need = 4
                    break
                length = _U16.unpack_from(buf, pos + 2)[0]
                head = 4
            elif length == 127:
                if size - pos < 10:
                    self._need = 10
                    break
                length = _U64.unpack_from(buf, pos + 2)[0]
                head = 10
            if length > self.max_size:
                raise FrameTooLarge("frame length", self.max_size, length)
            end = pos + head + length
            if end > size:
                self._need = end - pos
                break
            payload = buf[pos + head : end]
            pos = end
            opcode = b0 & 0x0F
            if opcode in (OP_BINARY, OP_TEXT):
                if self._frag is not None:
                    raise FramingError("expected a continuation frame")
                if b0 & 0x80:
                    self.on_message(opcode == OP_TEXT, payload)
                else:
                    self._frag = [payload]
                    self._frag_text = opcode == OP_TEXT
            elif opcode == OP_CONT:
                replies += self._continuation(payload, bool(b0 & 0x80))
            elif opcode == OP_PING:
                replies += self.encode_control(OP_PONG, payload)
            elif opcode == OP_CLOSE:
                self._closed(payload)
            elif opcode != OP_PONG:
                raise FramingError(f"unknown opcode {opcode:#x}")
        if pos < size:
            if size - pos < 2:
                self._need = 2
            self._buf += memoryview(buf)[pos:]
        return replies

    def _continuation(self, payload: bytes, fin: bool) -> bytes:
        if self._frag is None:
            raise FramingError("unexpected continuation frame")
        self._frag.append(payload)
        if sum(map(len, self._frag)) > self.max_size:
            raise FrameTooLarge("fragmented message", self.max_size)
        if fin:
            parts, self._frag = self._frag, None
            self.on_message(self._frag_text, b"".join(parts))
        return b""

    def _closed(self, payload: bytes) -> None:
        try:
            close = Close.parse(payload)
        except ProtocolError as exc:
            raise FramingError(f"bad close frame: {exc}") from None
        reply = self.encode_control(OP_CLOSE, payload[:2])
        raise ConnectionClosedByPeer(close.code, close.reason, reply)


class SansIOCodec:
    """Framing by websockets' sans-I/O protocol (any negotiated extension)."""

    __slots__ = ("_frag", "_frag_text", "max_size", "on_message", "protocol")

    def __init__(self, protocol: ClientProtocol, on_message: OnMessage, max_size: int) -> None:
        self.protocol = protocol
        self.on_message = on_message
        self.max_size = max_size
        self._frag: list[bytes] | None = None
        self._frag_text = False

    def _drain(self) -> bytes:
        return b"".join(self.protocol.data_to_send())

    def encode(self, payload: bytes, text: bool) -> bytes:
        if text:
            self.protocol.send_text(payload)
        else:
            self.protocol.send_binary(payload)
        return self._drain()

    def encode_control(self, opcode: int, payload: bytes) -> bytes:
        if opcode == OP_CLOSE:
            close = Close.parse(payload) if payload else None
            self.protocol.send_close(close.code if close else None, close.reason if close else "")
        elif opcode == OP_PING:
            self.protocol.send_ping(payload)
        else:
            self.protocol.send_pong(payload)
        return self._drain()

    def feed(self, data: bytes) -> bytes:
        protocol = self.protocol
        protocol.receive_data(data)
        for event in protocol.events_received():
            if isinstance(event, Frame):
                self._frame(event)
        replies = self._drain()
        if protocol.parser_exc is not None:
            exc = protocol.parser_exc
            # its traceback holds the parser's frames, and so what it read (16 MiB of an
            # inflated bomb), in a cycle with the protocol: free them now, not at the next GC
            exc.__traceback__ = None
            if isinstance(exc, PayloadTooBig):  # a frame, or what it inflates to
                raise FrameTooLarge("frame length", self.max_size)
            raise FramingError(str(exc) or type(exc).__name__)
        if protocol.close_rcvd is not None:
            close = protocol.close_rcvd
            raise ConnectionClosedByPeer(close.code, close.reason, replies)
        return replies

    def _frame(self, frame: Frame) -> None:
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self.on_message(opcode is Opcode.TEXT, bytes(frame.data))
            else:
                self._frag = [bytes(frame.data)]
                self._frag_text = opcode is Opcode.TEXT
        elif opcode is Opcode.CONT and self._frag is not None:
            self._frag.append(bytes(frame.data))
            if frame.fin:
                parts, self._frag = self._frag, None
                self.on_message(self._frag_text, b"".join(parts))
