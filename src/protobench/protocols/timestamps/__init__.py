"""Exchange times from the kernel's clock: socket timestamps read beside the bytes.

A reply's time is the kernel's receive timestamp of the packet that completed
it, and a request's time the kernel's transmit timestamp of its first packet
(or the user-space time immediately before the send syscall where the kernel
gives none), so the generator's own wake-up and dispatch are not in the
server's latency. The pieces, for any protocol client on a TCP socket:

* :mod:`.clock`: :class:`~.clock.Stamps` (the times of one session's exchange
  in flight, which the engine reads), the platform's support
  (:func:`~.clock.probe`) and the kernel stamp's conversion to the engine's
  clock (``time.perf_counter_ns``);
* :mod:`.reactor`: :class:`~.reactor.Reactor`, one ``epoll`` set of sockets,
  read when they become readable (eager) or only when the engine polls it
  (lazy: the open model reads replies at its next send's wake-up);
* :mod:`.transport`: :class:`~.transport.StampedTransport`, an asyncio
  transport over a socket of that set that reads with ``recvmsg`` and stamps
  sends (:meth:`~.transport.StampedTransport.write_request`), and
  :func:`~.transport.open_stamped`, which connects one.
"""
