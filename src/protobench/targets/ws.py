"""``protobench serve ws``: a WebSocket echo server that counts what it does.

Every message received on any path is sent back with the same type, ``delay``
after it arrived (never sooner, released by a
:class:`~protobench.targets.delays.DelayLine`; echoes keep their order). With
``corrupt_every = N`` the last byte of every Nth message (counted over all
connections) is changed, so tests know exactly how many
echoes must fail verification. On ``/push`` the server instead pushes
``push_size``-byte messages at ``push_rate`` per connection, each starting with
``>QQ`` (sequence from 1, send time in ``time.time_ns()``) - what the
``subscribe`` op's ``stamped`` mode reads.

``GET /stats`` answers JSON counters: ``messages`` (echoed, counted when
received), ``corrupted``, ``pushed``, ``connections`` (open) and ``accepted``.

``tls = true`` serves ``wss://`` with a certificate from a mock CA generated in
a temporary directory (or ``cert_file``/``key_file``); ``client_auth = true``
also requires client certificates from that CA. The announced URL names the CA
file (and a client certificate and key) in its fragment, see
:mod:`protobench.tlsutil`. This Python server echoes about 20k messages per
second on one core; ``bench/echo`` is the native one for benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import struct
import tempfile
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import ClassVar

from pydantic import Field, model_validator
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.version import version as websockets_version

from protobench.protocols.base import StrictModel
from protobench.targets.base import Announcement, EmbeddedTarget, Ready
from protobench.targets.delays import DelayLine
from protobench.tlsutil import generate, url_with_files
from protobench.vocab.fields import Duration, Rate

PUSH_HEADER = struct.Struct(">QQ")


class WsTargetOptions(StrictModel):
    """Options of the embedded echo server (``protobench serve ws --help``)."""

    delay: Duration = Field(default=0.0, description="echo every message this long after it")
    corrupt_every: int = Field(
        default=0, ge=0, description="change one byte of every Nth echo (0: never)"
    )
    push_rate: Rate = Field(default=10.0, description="messages per second pushed on /push")
    push_size: int = Field(
        default=64,
        ge=PUSH_HEADER.size,
        le=16 * 1024 * 1024,
        description="bytes of each pushed message",
    )
    compression: bool = Field(
        default=True, description="accept permessage-deflate when a client offers it"
    )
    tls: bool = Field(default=False, description="wss:// (generated certificates unless given)")
    client_auth: bool = Field(default=False, description="with tls: require a client certificate")
    cert_file: str | None = Field(default=None, description="with tls: the server's certificate")
    key_file: str | None = Field(default=None, description="with tls: its private key")

    @model_validator(mode="after")
    def _consistent(self) -> WsTargetOptions:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.client_auth and not self.tls:
            raise ValueError("client_auth needs tls = true")
        return self


@dataclass
class EchoStats:
    """What the server counted."""

    messages: int = 0
    corrupted: int = 0
    pushed: int = 0
    connections: int = 0
    accepted: int = 0


def _corrupt(message: str | bytes) -> str | bytes:
    if isinstance(message, str):
        return message[:-1] + ("A" if message[-1:] != "A" else "B")
    return message[:-1] + bytes([message[-1] ^ 0xFF]) if message else b"\xff"


class EchoServer:
    """The handlers, parameterised by the options, with their counters."""

    def __init__(self, options: WsTargetOptions, delays: DelayLine) -> None:
        self.options = options
        self.stats = EchoStats()
        self._delays = delays
        self._delay_ns = round(options.delay * 1e9)

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0] == "/stats":
            body = json.dumps(self.stats.__dict__) + "\n"
            return connection.respond(HTTPStatus.OK, body)
        return None

    async def handle(self, ws: ServerConnection) -> None:
        self.stats.connections += 1
        self.stats.accepted += 1
        try:
            if ws.request is not None and ws.request.path.split("?", 1)[0] == "/push":
                await self._push(ws)
            else:
                await self._echo(ws)
        except ConnectionClosed:
            pass
        finally:
            self.stats.connections -= 1

    async def _echo(self, ws: ServerConnection) -> None:
        if not self._delay_ns:
            async for message in ws:
                await ws.send(self._reply(message))
            return
        replies: asyncio.Queue[tuple[int, str | bytes]] = asyncio.Queue()
        sender = asyncio.create_task(self._send_when_due(ws, replies))
        try:
            async for message in ws:
                replies.put_nowait((time.monotonic_ns() + self._delay_ns, self._reply(message)))
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender

    def _reply(self, message: str | bytes) -> str | bytes:
        stats = self.stats
        stats.messages += 1
        every = self.options.corrupt_every
        if every and stats.messages % every == 0:
            stats.corrupted += 1
            return _corrupt(message)
        return message

    async def _send_when_due(
        self, ws: ServerConnection, replies: asyncio.Queue[tuple[int, str | bytes]]
    ) -> None:
        """Send each reply at its due time, in arrival order (a delay does not add up)."""
        with contextlib.suppress(ConnectionClosed):
            while True:
                due, reply = await replies.get()
                await self._delays.sleep_until(due)
                await ws.send(reply)

    async def _push(self, ws: ServerConnection) -> None:
        loop = asyncio.get_running_loop()
        rate = self.options.push_rate
        filler = b"p" * (self.options.push_size - PUSH_HEADER.size)
        start = loop.time()
        seq = 0
        while True:
            seq += 1
            await ws.send(PUSH_HEADER.pack(seq, time.time_ns()) + filler)
            self.stats.pushed += 1
            await asyncio.sleep(max(0.0, start + seq / rate - loop.time()))


def _server_context(
    options: WsTargetOptions, workdir: str
) -> tuple[ssl.SSLContext, dict[str, str]]:
    """The TLS context, and the files a client needs (for the URL fragment)."""
    pki = generate(workdir, ["server", "client"])
    cert = options.cert_file or str(pki.leaves["server"].cert)
    key = options.key_file or str(pki.leaves["server"].key)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    files = {}
    if not options.cert_file:
        files["ca_file"] = str(pki.ca.cert)
    if options.client_auth:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(str(pki.ca.cert))
        files["cert_file"] = str(pki.leaves["client"].cert)
        files["key_file"] = str(pki.leaves["client"].key)
    return ctx, files


class WsEchoTarget(EmbeddedTarget):
    """The embedded WebSocket echo/push server."""

    name: ClassVar[str] = "ws"
    description: ClassVar[str] = "WebSocket echo (optional delay, corruption) and /push; GET /stats"
    options: ClassVar[type[StrictModel]] = WsTargetOptions

    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        assert isinstance(options, WsTargetOptions)
        delays = DelayLine(asyncio.get_running_loop())
        server = EchoServer(options, delays)
        with contextlib.ExitStack() as stack:
            stack.callback(delays.close)
            context = None
            files: dict[str, str] = {}
            if options.tls:
                workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="protobench-ws-"))
                context, files = _server_context(options, workdir)
            async with serve(
                server.handle,
                host,
                port,
                process_request=server.process_request,
                compression="deflate" if options.compression else None,
                ssl=context,
                max_size=16 * 1024 * 1024,
            ) as ws_server:
                bound = ws_server.sockets[0].getsockname()
                scheme = "wss" if context else "ws"
                url = url_with_files(f"{scheme}://{bound[0]}:{bound[1]}/", files)
                ready(Announcement(url, f"protobench ws echo (websockets {websockets_version})"))
                await asyncio.Future()
