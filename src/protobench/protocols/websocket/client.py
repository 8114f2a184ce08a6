"""One client WebSocket connection on an asyncio protocol, and the error mapping.

:func:`connect` opens TCP (TLS for ``wss://``), performs the opening handshake
with websockets' :class:`~websockets.client.ClientProtocol` (request building,
response checks, extension and subprotocol negotiation), then hands framing to
a codec (:mod:`.codec`). Every failure becomes an :class:`OpError` here and
nowhere else:

``refused``   ECONNREFUSED
``connect``   DNS, TLS (certificate verification says why), other socket errors,
              no handshake within the timeout
``auth``      handshake answered 401 or 403 (code = the status)
``protocol``  another handshake status (code = the status) or a bad handshake,
              a framing error from the server (``frame length over max_size (16 MiB):
              N B`` for a frame, or a deflated message, longer than ``max_size``)
``closed``    the server closed the connection or the socket broke

Every error after the handshake ends the connection: it is
:attr:`~protobench.vocab.errors.OpError.lost`, so the engine reopens the session
(one error per failed exchange, then a new connection). A connection whose first
frames, in the same read as the handshake's response, already broke it is that
error from :func:`connect`, never a session on a closed transport.
``local``     this process is out of file descriptors (the limit is named) or of
              source ports to the server (see ``source_addresses``)

With a :class:`~protobench.protocols.timestamps.reactor.Reactor` (the kernel's
clock) a ``ws://`` connection is a socket of ours read with ``recvmsg``
(:func:`~protobench.protocols.timestamps.transport.open_stamped`): the kernel's
receive stamp of the packet that completed a message is in the session's
:class:`~protobench.protocols.timestamps.clock.Stamps` when the message reaches
``on_message``, and a session sends its requests with
:func:`~protobench.protocols.timestamps.send.request_writer` (the kernel's send
stamp). ``wss://`` connections, and every connection without a reactor, use the
loop's transports (the user clock).
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit, urlunsplit

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake, InvalidStatus
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.http11 import Response
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from protobench.hostutil import fd_limit_text
from protobench.protocols.sourceaddr import connected_socket, source_for
from protobench.protocols.timestamps.clock import Stamps
from protobench.protocols.timestamps.reactor import Reactor
from protobench.protocols.timestamps.transport import open_stamped
from protobench.protocols.websocket.codec import (
    ConnectionClosedByPeer,
    FastCodec,
    FrameTooLarge,
    FramingError,
    OnMessage,
    SansIOCodec,
)
from protobench.protocols.websocket.options import WebSocketOptions
from protobench.tlsutil import client_context, split_url_files
from protobench.vocab.errors import ErrorClass, OpError

_END_OF_HEAD = b"\r\n\r\n"
_MAX_HEAD = 64 * 1024


def _ignore(text: bool, data: bytes) -> None:
    """Messages before a session takes over the connection are dropped."""


@dataclass(frozen=True)
class Endpoint:
    """Where to connect: the URL without its fragment, and the TLS context."""

    url: str
    host: str
    port: int
    ssl: ssl.SSLContext | None


def endpoint(target: str, options: WebSocketOptions, path: str | None = None) -> Endpoint:
    """Resolve ``target`` (files named in its fragment fill options left unset)."""
    url, files = split_url_files(target)
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise OpError(ErrorClass.CONNECT, f"expected a ws:// or wss:// URL, got {target!r}")
    if path is not None:
        url = urlunsplit(parts._replace(path=path, query=""))
    uri = parse_uri(url)
    context = None
    if uri.secure:
        try:
            context = client_context(
                ca_file=options.ca_file or files.get("ca_file"),
                cert_file=options.cert_file or files.get("cert_file"),
                key_file=options.key_file or files.get("key_file"),
                key_password=options.key_password,
                insecure=options.insecure,
            )
        except (OSError, ssl.SSLError) as exc:
            raise OpError(ErrorClass.CONNECT, f"cannot load the TLS files: {exc}") from None
    return Endpoint(url, uri.host, uri.port, context)


class WsConnection(asyncio.Protocol):
    """The asyncio protocol of one connection. Sessions set ``on_message`` and ``on_lost``
    (and ``on_writable``, told False when the socket's buffer fills and True when it drains:
    a protocol carried over the connection, as MQTT over WebSocket, follows it)."""

    def __init__(self, client: ClientProtocol, options: WebSocketOptions) -> None:
        self.client: ClientProtocol | None = client
        """websockets' handshake state; dropped after it unless its codec needs it."""
        self.options = options
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.codec: FastCodec | SansIOCodec | None = None
        self.on_lost: Callable[[OpError], None] | None = None
        self.on_writable: Callable[[bool], None] | None = None
        self.lost: OpError | None = None
        self.paused = False
        self.subprotocol: str | None = None
        """The subprotocol the server chose in the handshake."""
        self._resumed: asyncio.Future[None] | None = None
        self._head = bytearray()

    def set_on_message(self, callback: OnMessage) -> None:
        assert self.codec is not None
        self.codec.on_message = callback

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = self.client
        assert client is not None
        request = client.connect()
        for name, value in self.options.headers.items():
            request.headers[name] = value
        client.send_request(request)
        self.transport.write(b"".join(client.data_to_send()))

    def data_received(self, data: bytes) -> None:
        codec = self.codec
        if codec is None:
            self._handshake(data)
            return
        try:
            replies = codec.feed(data)
        except ConnectionClosedByPeer as exc:
            self._write(exc.reply)
            self._fail(OpError(ErrorClass.CLOSED, str(exc), str(exc.code)))
            return
        except FrameTooLarge as exc:
            self._fail(OpError(ErrorClass.PROTOCOL, str(exc)))
            return
        except FramingError as exc:
            self._fail(OpError(ErrorClass.PROTOCOL, f"bad frame from the server: {exc}"))
            return
        if replies:
            self._write(replies)

    def connection_lost(self, exc: Exception | None) -> None:
        detail = f"connection lost: {exc}" if exc else "the server closed the connection"
        self._fail(OpError(ErrorClass.CLOSED, detail))

    def pause_writing(self) -> None:
        self.paused = True
        if self.on_writable is not None:
            self.on_writable(False)

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()
        if self.on_writable is not None:
            self.on_writable(True)

    async def writable(self) -> None:
        """Return once the transport's buffer has room again, or the connection is lost."""
        if not self.paused or self.lost is not None:
            return
        if self._resumed is None:
            self._resumed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._resumed)

    def _wake(self) -> None:
        resumed, self._resumed = self._resumed, None
        if resumed is not None and not resumed.done():
            resumed.set_result(None)

    # handshake

    def _handshake(self, data: bytes) -> None:
        self._head += data
        end = self._head.find(_END_OF_HEAD)
        if end < 0:
            if len(self._head) > _MAX_HEAD:
                self._fail(OpError(ErrorClass.PROTOCOL, "handshake response headers too long"))
            return
        end += len(_END_OF_HEAD)
        head, rest = bytes(self._head[:end]), bytes(self._head[end:])
        self._head.clear()
        status = _status(head)
        if status != 101:
            self._fail(_status_error(status))
            return
        client = self.client
        assert client is not None
        client.receive_data(head)
        events = client.events_received()
        if client.handshake_exc is not None or not any(isinstance(e, Response) for e in events):
            self._fail(_handshake_error(client.handshake_exc))
            return
        max_size = self.options.max_size
        self.subprotocol = client.subprotocol
        if client.extensions:
            self.codec = SansIOCodec(client, _ignore, max_size)
        else:
            self.codec = FastCodec(_ignore, max_size)
            self.client = None  # an idle connection keeps no handshake state
        if not self.opened.done():
            self.opened.set_result(None)
        if rest:
            self.data_received(rest)

    # sending and closing

    def send(self, payload: bytes, text: bool) -> None:
        assert self.codec is not None
        assert self.transport is not None
        self.transport.write(self.codec.encode(payload, text))

    def _write(self, data: bytes) -> None:
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _fail(self, error: OpError) -> None:
        if self.lost is not None:
            return
        error.lost = True
        self.lost = error
        self._wake()
        if not self.opened.done():
            self.opened.set_exception(error)
        if self.transport is not None:
            self.transport.close()
        if self.on_lost is not None:
            self.on_lost(error)

    def close(self) -> None:
        """Send a normal close frame and close the socket; idempotent."""
        if self.lost is None:
            self.lost = OpError(ErrorClass.CLOSED, "closed by the client")
            if self.codec is not None:
                self._write(self.codec.encode_control(0x8, (1000).to_bytes(2, "big")))
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


def _status(head: bytes) -> int | None:
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return None
    return int(parts[1])


def _status_error(status: int | None) -> OpError:
    if status is None:
        return OpError(ErrorClass.PROTOCOL, "the server did not answer with HTTP")
    cls = ErrorClass.AUTH if status in (401, 403) else ErrorClass.PROTOCOL
    return OpError(cls, f"handshake refused with HTTP {status}", str(status))


def _handshake_error(exc: Exception | None) -> OpError:
    if isinstance(exc, InvalidStatus):
        return _status_error(exc.response.status_code)
    if isinstance(exc, InvalidHandshake):
        return OpError(ErrorClass.PROTOCOL, f"bad handshake: {exc}")
    return OpError(ErrorClass.PROTOCOL, "bad handshake response")


async def connect(
    target: str,
    options: WebSocketOptions,
    within: float,
    path: str | None = None,
    index: int = 0,
    *,
    stamps: Stamps | None = None,
    reactor: Reactor | None = None,
) -> WsConnection:
    """Open one connection to ``target`` and complete the handshake within ``within`` seconds
    (from the source address of session ``index``, see :mod:`~protobench.protocols.sourceaddr`).

    With a ``reactor`` a ``ws://`` connection reads the kernel's timestamps into ``stamps``
    (the session's: give the same to :func:`~protobench.protocols.timestamps.send.request_writer`).
    """
    where = endpoint(target, options, path)
    client = ClientProtocol(
        parse_uri(where.url),
        origin=options.origin,  # type: ignore[arg-type]
        extensions=[ClientPerMessageDeflateFactory()] if options.compression else None,
        subprotocols=[Subprotocol(s) for s in options.subprotocols] or None,
        max_size=options.max_size,
    )
    loop = asyncio.get_running_loop()
    conn: WsConnection | None = None
    source = source_for(options.source_addresses, index, where.host)
    hostname = where.host if where.ssl else None
    try:
        async with asyncio.timeout(within):
            if reactor is not None and where.ssl is None:
                _, made = await open_stamped(
                    lambda: WsConnection(client, options),
                    where.host,
                    where.port,
                    reactor=reactor,
                    stamps=stamps if stamps is not None else Stamps(),
                    source=source,
                )
                conn = cast(WsConnection, made)
            elif source is None:
                _, conn = await loop.create_connection(
                    lambda: WsConnection(client, options),
                    where.host,
                    where.port,
                    ssl=where.ssl,
                    server_hostname=hostname,
                )
            else:
                sock = await connected_socket(where.host, where.port, source)
                _, conn = await loop.create_connection(
                    lambda: WsConnection(client, options),
                    sock=sock,
                    ssl=where.ssl,
                    server_hostname=hostname,
                )
            await conn.opened
            if conn.lost is not None:  # the frames after the handshake broke it at once
                raise conn.lost
    except OpError:
        raise
    except ConnectionRefusedError:
        raise OpError(
            ErrorClass.REFUSED, f"connection refused by {where.host}:{where.port}"
        ) from None
    except ssl.SSLCertVerificationError as exc:
        hint = "" if options.ca_file else " (set ca_file, or insecure = true to skip verification)"
        raise OpError(
            ErrorClass.CONNECT, f"TLS certificate verification failed: {exc.verify_message}{hint}"
        ) from None
    except ssl.SSLError as exc:
        raise OpError(ErrorClass.CONNECT, f"TLS handshake failed: {exc.reason or exc}") from None
    except TimeoutError:
        if conn is not None:
            conn.close()
        raise OpError(ErrorClass.CONNECT, f"no WebSocket handshake within {within:g}s") from None
    except OSError as exc:
        raise os_error(exc, where.host, where.port) from None
    return conn


def os_error(exc: OSError, host: str, port: int) -> OpError:
    """The error of a socket call that failed while connecting to ``host:port``: ``local``
    when this process is out of file descriptors or source ports, else ``connect``."""
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        return OpError(ErrorClass.LOCAL, fd_limit_text(exc.strerror))
    if exc.errno == errno.EADDRNOTAVAIL:
        return OpError(
            ErrorClass.LOCAL,
            f"no local port left to {host}:{port} ({exc.strerror}): spread the connections "
            "over more source_addresses",
        )
    return OpError(ErrorClass.CONNECT, f"cannot connect to {host}:{port}: {exc.strerror or exc}")
