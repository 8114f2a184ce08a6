"""Hostile servers on loopback, each a process that exits by itself (``--lifetime``).

``python -m tests.support.hostile_sizes MODE [--lifetime S]`` prints its port on the
first line of stdout, serves every connection the same way until the lifetime is
over (or SIGTERM), then prints what it saw as one JSON line (``connections``, ``requests``: the
requests or messages it read, ``most``: the most bytes one response or stream took
before the client stopped reading) and exits. Modes:

``http-endless-head``  a status line, then headers without end
``http-endless-body``  a chunked JSON body without end
``mqtt-big-packet``    CONNACK, then a PUBLISH announcing 268,435,455 bytes, sent up to
                       256 MiB
``ws-huge-frame``      the 101 response and, in the same write, a frame announcing
                       2^63-1 bytes
``ws-bomb``            permessage-deflate, each message answered with one that inflates
                       to 64 MiB

Every write waits for the client to read (flow control): what a client holds is what
it kept, not what the kernel buffered.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import signal
import struct
import subprocess
import sys
import zlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

MiB = 1024 * 1024
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Seen:
    connections = 0
    requests = 0
    most = 0


async def _stream(writer: asyncio.StreamWriter, chunk: bytes, budget: int) -> None:
    sent = 0
    while sent < budget:
        writer.write(chunk)
        sent += len(chunk)
        Seen.most = max(Seen.most, sent)
        await writer.drain()


async def http_endless_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    Seen.requests += 1
    writer.write(b"HTTP/1.1 200 OK\r\n")
    await _stream(writer, b"X-Pad: " + b"a" * 1017 + b"\r\n", 1 << 40)


async def http_endless_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await reader.readuntil(b"\r\n\r\n")
        Seen.requests += 1
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        await _stream(writer, b"%x\r\n%s\r\n" % (MiB, b" " * MiB), 1 << 40)


async def mqtt_big_packet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(4096)  # the CONNECT
    Seen.requests += 1
    # CONNACK (accepted, 3.1.1) and a PUBLISH of 268,435,455 bytes, in one write
    writer.write(b"\x20\x02\x00\x00" + b"\x30\xff\xff\xff\x7f\x00\x01t")
    await _stream(writer, bytes(MiB), 256 * MiB)
    await reader.read()


async def _ws_handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, extra: bytes
) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    key = next(
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key:")
    )
    accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n" + extra + b"\r\n"
    )


async def _ws_message(reader: asyncio.StreamReader) -> None:
    """Read one masked client frame."""
    head = await reader.readexactly(2)
    length = head[1] & 0x7F
    if length == 126:
        length = struct.unpack(">H", await reader.readexactly(2))[0]
    elif length == 127:
        length = struct.unpack(">Q", await reader.readexactly(8))[0]
    await reader.readexactly(4 + length)


async def ws_huge_frame(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    response = await _ws_handshake(reader, writer, b"")
    Seen.requests += 1
    writer.write(response + b"\x82\x7f" + struct.pack(">Q", 2**63 - 1) + b"x" * 1000)
    await writer.drain()
    await reader.read()


_BOMB = b""


def _bomb() -> bytes:
    """A permessage-deflate binary message inflating to 64 MiB of zeros (about 64 KiB)."""
    global _BOMB  # noqa: PLW0603 - built once
    if not _BOMB:
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = deflate.compress(bytes(64 * MiB)) + deflate.flush(zlib.Z_SYNC_FLUSH)
        data = data.removesuffix(b"\x00\x00\xff\xff")
        _BOMB = b"\xc2\x7f" + struct.pack(">Q", len(data)) + data
    return _BOMB


async def ws_bomb(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    extension = b"Sec-WebSocket-Extensions: permessage-deflate\r\n"
    writer.write(await _ws_handshake(reader, writer, extension))
    while True:
        await _ws_message(reader)
        Seen.requests += 1
        writer.write(_bomb())
        await writer.drain()


MODES: dict[str, Handler] = {
    "http-endless-head": http_endless_head,
    "http-endless-body": http_endless_body,
    "mqtt-big-packet": mqtt_big_packet,
    "ws-huge-frame": ws_huge_frame,
    "ws-bomb": ws_bomb,
}


async def serve(handler: Handler, lifetime: float) -> None:
    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        Seen.connections += 1
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await handler(reader, writer)
        writer.close()

    server = await asyncio.start_server(connected, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), lifetime)
    server.close()
    seen = {"connections": Seen.connections, "requests": Seen.requests, "most": Seen.most}
    print(json.dumps(seen), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("--lifetime", type=float, default=30.0)
    args = parser.parse_args()
    asyncio.run(serve(MODES[args.mode], args.lifetime))
    sys.exit(0)


if __name__ == "__main__":
    main()


class Hostile:
    """A hostile server process (:func:`hostile`): its port, and what it saw once it ended."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        assert proc.stdout is not None
        self.port = int(proc.stdout.readline())

    def seen(self) -> dict[str, int]:
        """Stop the server and return what it saw (``connections``, ``requests``, ``most``)."""
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=30)
        seen: dict[str, int] = json.loads(out.splitlines()[-1])
        return seen


@contextlib.contextmanager
def hostile(mode: str, lifetime: float = 60.0) -> Iterator[Hostile]:
    """Run the hostile server ``mode`` for at most ``lifetime`` seconds."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.hostile_sizes", mode, "--lifetime", str(lifetime)],
        cwd=Path(__file__).parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield Hostile(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
