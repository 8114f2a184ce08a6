"""The times of an exchange, the kernel's socket timestamps, and the platform's support for them.

:class:`Stamps` is what a session tells the engine about its exchange in
flight, on the engine's clock (``time.perf_counter_ns``, ``CLOCK_MONOTONIC``):

* ``sent``: when the request left: the kernel's software transmit stamp of its
  first packet where the socket gives one (``SOF_TIMESTAMPING_TX_SOFTWARE``,
  read from the socket's error queue), else the user-space time taken
  immediately before the send syscall, after the request was built;
* ``received``: the kernel's software receive stamp of the packet that
  completed the reply (for TCP, of the last segment read with it), 0 when the
  session has none (the user clock: the engine takes its own time when the
  completion reaches it).

The engine clears ``sent`` before it starts an exchange and reads both when
the exchange completes: latency = ``received`` − ``sent`` (the open model:
− the intended time), and the generator's own delay = the engine's time of the
completion − ``received``.

The kernel stamps ``CLOCK_REALTIME``; :class:`WallClock` converts them to the
engine's clock with the offset between the two clocks, which only a step of
the wall clock changes (both are slewed alike), so the worker resynchronises
it every tick (:meth:`WallClock.resync`).

:func:`probe` says whether this platform gives receive and transmit stamps,
by trying them on a loopback connection once per process; :func:`enable`
turns them on for one connected TCP socket. The socket option numbers are
Linux's generic ones (``SO_TIMESTAMPING_OLD`` = 37), so only the architectures
that use them are tried.
"""

from __future__ import annotations

import contextlib
import functools
import platform
import socket
import struct
import sys
import time
from dataclasses import dataclass
from typing import Final, Literal

type ClockName = Literal["kernel", "user"]
KERNEL: Final = "kernel"
USER: Final = "user"
CLOCKS: Final = (KERNEL, USER)
"""The run setting's values: the kernel's timestamps (the default where available), or user
space."""

SO_TIMESTAMPING: Final = 37
"""``SO_TIMESTAMPING_OLD`` of ``asm-generic/socket.h`` (also the ``SCM_TIMESTAMPING`` type)."""
SOF_TX_SOFTWARE: Final = 1 << 1
SOF_RX_SOFTWARE: Final = 1 << 3
SOF_SOFTWARE: Final = 1 << 4
SOF_OPT_ID: Final = 1 << 7
SOF_OPT_TSONLY: Final = 1 << 11
SOF_OPT_ID_TCP: Final = 1 << 16
RX_FLAGS: Final = SOF_RX_SOFTWARE | SOF_SOFTWARE
TX_FLAGS: Final = SOF_TX_SOFTWARE | SOF_OPT_ID | SOF_OPT_TSONLY
IP_RECVERR: Final = 11
IPV6_RECVERR: Final = 25
ANCILLARY: Final = 64
"""Room for one ``SCM_TIMESTAMPING`` message (three timespecs) beside received bytes."""
ERRQUEUE_ANCILLARY: Final = 256
"""Room for a transmit stamp and its ``sock_extended_err`` (with the offender's address)."""
ID_MASK: Final = 0xFFFFFFFF
_GENERIC_ARCHES = frozenset(
    {"x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "riscv64", "s390x", "ppc64le"}
)
_unpack_timespec = struct.Struct("@ll").unpack_from
_unpack_key = struct.Struct("=I").unpack_from
_EXTENDED_ERR_SIZE = 16
"""``struct sock_extended_err``: errno, origin, type, code, pad, info, data (the key at 12)."""
_SOL_SOCKET = socket.SOL_SOCKET
_RECVERR = (IP_RECVERR, IPV6_RECVERR)
SO_EE_ORIGIN_TIMESTAMPING: Final = 4
PROBE_SECONDS: Final = 1.0
"""How long :func:`probe` waits at most for the kernel's first stamps."""

perf_ns = time.perf_counter_ns


class Stamps:
    """One session's exchange in flight on the engine's clock (ns; 0: not known).

    ``sent`` is written by the session's send (:meth:`stamp_send` or a
    :class:`~protobench.protocols.timestamps.transport.StampedTransport`),
    ``received`` by a stamped transport before it hands the bytes of a packet to
    the codec: when the codec completes a reply inside that call, this is the
    reply's time. ``kernel_receive`` and ``kernel_send`` say whether the session's
    connection reads the kernel's stamps (the report's ``clock``).
    """

    __slots__ = ("kernel_receive", "kernel_send", "received", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0
        self.kernel_receive = False
        self.kernel_send = False

    def stamp_send(self) -> None:
        """The user-space send time: call immediately before the syscall that sends a request."""
        self.sent = perf_ns()


class WallClock:
    """``CLOCK_REALTIME`` (the kernel's stamps) minus the engine's clock, in nanoseconds."""

    __slots__ = ("offset",)

    def __init__(self) -> None:
        self.offset = 0
        self.resync()

    def resync(self) -> None:
        """Measure the offset again (the read of the wall clock closest to the engine's)."""
        best = -1
        for _ in range(3):
            before = perf_ns()
            wall = time.time_ns()
            after = perf_ns()
            if best < 0 or after - before < best:
                best = after - before
                self.offset = wall - (before + after) // 2

    def to_engine(self, wall_ns: int) -> int:
        """A kernel stamp (``CLOCK_REALTIME`` ns) on the engine's clock."""
        return wall_ns - self.offset


WALL = WallClock()
"""The process's one conversion of kernel stamps (resynchronised by the worker's tick)."""


def kernel_ns(payload: bytes) -> int:
    """The software stamp of an ``SCM_TIMESTAMPING`` payload on the engine's clock; 0 if none."""
    seconds: int
    nanos: int
    seconds, nanos = _unpack_timespec(payload)
    return seconds * 1_000_000_000 + nanos - WALL.offset if seconds else 0


def received_ns(ancillary: list[tuple[int, int, bytes]]) -> int:
    """The receive stamp among ``recvmsg``'s ancillary messages (engine's clock; 0 if none).

    A TCP socket with only ``SO_TIMESTAMPING`` on gives one message, the stamp (none for
    a packet the kernel did not stamp: stamping is turned on host-wide from a work queue).
    """
    if not ancillary:
        return 0
    level, kind, payload = ancillary[-1]
    if kind != SO_TIMESTAMPING or level != _SOL_SOCKET:
        return 0
    seconds: int
    nanos: int
    seconds, nanos = _unpack_timespec(payload)
    return seconds * 1_000_000_000 + nanos - WALL.offset if seconds else 0


def transmit_stamp(ancillary: list[tuple[int, int, bytes]]) -> tuple[int, int] | None:
    """``(stamp on the engine's clock, key)`` of one error-queue message, if it is a send stamp.

    The key is the stamp's ``OPT_ID``: for TCP, the byte offset of the last
    byte of the send it stamps (counted from the first byte sent after the
    option was set, modulo 2**32). (Called once per request: kept lean.)
    """
    stamp = 0
    key = -1
    for level, kind, payload in ancillary:
        if kind == SO_TIMESTAMPING and level == _SOL_SOCKET:
            seconds, nanos = _unpack_timespec(payload)  # kernel_ns, inlined
            stamp = seconds * 1_000_000_000 + nanos - WALL.offset if seconds else 0
        elif (
            kind in _RECVERR
            and len(payload) >= _EXTENDED_ERR_SIZE
            and payload[4] == SO_EE_ORIGIN_TIMESTAMPING  # sock_extended_err.ee_origin
        ):
            key = _unpack_key(payload, 12)[0]  # .ee_data
    return (stamp, key) if stamp and key >= 0 else None


def enable(sock: socket.socket, send: bool) -> tuple[bool, bool]:
    """Turn on the kernel's stamps for a connected TCP socket: ``(receive, send)`` as obtained.

    Transmit stamps (``send``) are asked with ``OPT_ID`` (and ``OPT_ID_TCP``
    where the kernel has it, 6.2 on) and ``OPT_TSONLY`` (the stamp without a
    copy of the packet).
    """
    attempts = [RX_FLAGS | TX_FLAGS | SOF_OPT_ID_TCP, RX_FLAGS | TX_FLAGS] if send else []
    for flags in [*attempts, RX_FLAGS]:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, flags)
        except OSError:
            continue
        return True, bool(flags & SOF_TX_SOFTWARE)
    return False, False


@dataclass(frozen=True)
class Support:
    """What the platform gives: receive stamps, send stamps, and why not when it does not."""

    receive: bool
    send: bool
    reason: str = ""


@functools.cache
def probe() -> Support:
    """Whether the kernel stamps packets here, tried once on a loopback connection."""
    if sys.platform != "linux":
        return Support(
            False, False, f"kernel socket timestamps need Linux (this is {sys.platform})"
        )
    machine = platform.machine().lower()
    if machine not in _GENERIC_ARCHES:
        return Support(False, False, f"socket timestamp options not known on {machine}")
    try:
        return _try_loopback()
    except OSError as exc:
        return Support(False, False, f"a loopback connection to try them failed: {exc}")


def _try_loopback() -> Support:
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(socket.create_server(("127.0.0.1", 0)))
        client = stack.enter_context(socket.create_connection(server.getsockname(), timeout=1.0))
        peer = stack.enter_context(server.accept()[0])
        receive, send = enable(client, send=True)
        if not receive:
            return Support(False, False, "the kernel refused SO_TIMESTAMPING")
        # The kernel turns stamping on for the whole host from a work queue when the first
        # socket asks for it: the first packets after that may come unstamped.
        deadline = time.monotonic() + PROBE_SECONDS
        while True:
            peer.sendall(b"!")
            _, ancillary, _, _ = client.recvmsg(1, ANCILLARY)
            if received_ns(ancillary):
                break
            if time.monotonic() > deadline:
                return Support(False, False, "the kernel gave no receive timestamp")
            time.sleep(0.002)
        client.sendall(b"?")
        client.setblocking(False)
        send = send and _sent_stamp(client, deadline)
        reason = "" if send else "the kernel gave no transmit timestamp"
        return Support(True, send, reason)
    raise AssertionError("unreachable")  # pragma: no cover - the with block returns


def _sent_stamp(sock: socket.socket, deadline: float) -> bool:
    while True:
        try:
            _, ancillary, _, _ = sock.recvmsg(0, ERRQUEUE_ANCILLARY, socket.MSG_ERRQUEUE)
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
            continue
        return transmit_stamp(ancillary) is not None
