"""One ``epoll`` set of stamped sockets, read as they become readable or when polled.

A :class:`Reactor` keeps its own ``epoll`` descriptor. While it is *eager*
(the default) the event loop watches that one descriptor and
:meth:`Reactor.poll` runs whenever any of its sockets is ready, handing each
ready socket's events to its handler; several replies ready together cost one
wake-up. While it is *lazy* (:meth:`Reactor.set_lazy`) the loop does not
watch it: replies wait in their sockets, stamped by the kernel on arrival,
until the engine polls (the open model polls at each send's wake-up and a
worker before it counts timeouts or ends an interval), so a paced worker
wakes once per request instead of once per request and once per reply.

Handlers run on the loop, from :meth:`Reactor.poll`; a handler may register,
modify or unregister descriptors (its own or others').

The kernel stamps received packets host-wide while any socket asks for it, and
turns that on and off from a work queue: packets that arrive just after the last
such socket closed and a new one asked are not stamped. A reactor holds one idle
socket asking for receive stamps for as long as it lives, so its connections'
replies are stamped from the start and across reconnections.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import weakref
from collections.abc import Callable

from protobench.protocols.timestamps.clock import RX_FLAGS, SO_TIMESTAMPING

EPOLLIN = select.EPOLLIN
EPOLLOUT = select.EPOLLOUT
EPOLLERR = select.EPOLLERR
EPOLLHUP = select.EPOLLHUP
BATCH = 64
"""Events taken per ``epoll_wait``; a full batch is followed by another at once."""

Handler = Callable[[int], None]
"""Called with a ready socket's ``epoll`` events."""
Deferred = Callable[[], None]
"""Sends a request held back until the end of a :meth:`Reactor.poll`."""

_DEFAULT: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Reactor] = (
    weakref.WeakKeyDictionary()
)


class Reactor:
    """Stamped sockets of one group (or of a loop), read eagerly or when polled."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None, *, send: bool = True) -> None:
        self._loop = loop if loop is not None else asyncio.get_running_loop()
        self._epoll = select.epoll()
        self._keeper = _stamping_socket()
        self._handlers: dict[int, Handler] = {}
        self._watched = False
        self.lazy = False
        self.send = send
        """Whether sockets read by this reactor ask the kernel for send stamps too."""
        self.batch_sends = True
        """Whether requests written by handlers during :meth:`poll` wait for its end (see
        :meth:`defer`); the open model turns it off so each arrival's send time is known
        when it is issued."""
        self._polling = False
        self._deferred: list[Deferred] = []

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop | None = None) -> Reactor:
        """The loop's shared eager reactor, for connections the engine gave none."""
        loop = loop if loop is not None else asyncio.get_running_loop()
        reactor = _DEFAULT.get(loop)
        if reactor is None or reactor.closed:
            reactor = _DEFAULT[loop] = cls(loop)
        return reactor

    @property
    def closed(self) -> bool:
        return self._epoll.closed

    def __len__(self) -> int:
        return len(self._handlers)

    def register(self, fd: int, handler: Handler, events: int = EPOLLIN) -> None:
        """Call ``handler(events)`` whenever ``fd`` is ready for ``events`` (or in error)."""
        self._epoll.register(fd, events)
        self._handlers[fd] = handler
        self._watch()

    def modify(self, fd: int, events: int) -> None:
        """Watch ``fd`` for other events (``EPOLLIN | EPOLLOUT`` while a write waits)."""
        self._epoll.modify(fd, events)

    def unregister(self, fd: int) -> None:
        """Forget ``fd`` (call before closing it)."""
        if self._handlers.pop(fd, None) is not None and not self._epoll.closed:
            with contextlib.suppress(OSError):  # already closed: the kernel dropped it
                self._epoll.unregister(fd)
        self._watch()

    def poll(self) -> int:
        """Hand every ready socket's events to its handler; return how many were ready.

        Requests deferred by the handlers (:meth:`defer`) are sent at the end.
        """
        handlers = self._handlers
        wait = self._epoll.poll
        ready = 0
        self._polling = self.batch_sends
        try:
            while handlers:
                events = wait(0, BATCH)
                for fd, mask in events:
                    handler = handlers.get(fd)
                    if handler is not None:
                        handler(mask)
                ready += len(events)
                if len(events) < BATCH:
                    break
        finally:
            self._polling = False
            if self._deferred:
                self._send_deferred()
        return ready

    def defer(self, sender: Deferred) -> bool:
        """Whether ``sender`` may send its request at the end of this poll (then it is
        called there); False outside a poll, or with :attr:`batch_sends` off.

        Replies that arrive together are all handled before any of the requests
        they start is sent, as the loop's own transports do: the server, woken by
        the first, takes the others in the same wake-up. Each request's send
        time is still its send's (the stamp is taken at the syscall).
        """
        if self._polling:
            self._deferred.append(sender)
            return True
        return False

    def _send_deferred(self) -> None:
        deferred = self._deferred
        self._deferred = []
        for send in deferred:
            send()

    def set_lazy(self, lazy: bool) -> None:
        """Lazy: read only when polled. Eager: whenever a socket is ready."""
        if lazy != self.lazy:
            self.lazy = lazy
            self._watch()

    def _watch(self) -> None:
        want = bool(self._handlers) and not self.lazy and not self._epoll.closed
        if want and not self._watched:
            self._loop.add_reader(self._epoll.fileno(), self.poll)
            self._watched = True
        elif not want and self._watched:
            self._loop.remove_reader(self._epoll.fileno())
            self._watched = False

    def close(self) -> None:
        """Stop watching and close the ``epoll`` descriptor (the sockets are their owners')."""
        if self._watched and not self._loop.is_closed():
            self._loop.remove_reader(self._epoll.fileno())
        self._watched = False
        self._handlers.clear()
        self._deferred.clear()
        self._epoll.close()
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None


def _stamping_socket() -> socket.socket | None:
    """An idle UDP socket that keeps the kernel's receive stamping on (None if refused)."""
    keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, RX_FLAGS)
    except OSError:
        keeper.close()
        return None
    return keeper
