"""The plugin contract every protocol implements.

A protocol plugin is a subclass of :class:`ProtocolPlugin`, registered under the entry
point group ``protobench.protocols``. It declares once:

* ``name`` - the protocol name used in profiles (``protocol = "http"``);
* ``options`` - a pydantic model of protocol-wide options (timeouts, TLS, auth);
  the same model validates the profile's ``[options]`` table and drives the CLI
  ``--opt key=value`` flags and the TUI form;
* ``operations`` - a mapping from op name to the pydantic model of that op's
  parameters (the keys allowed in a ``[[group]]`` of that op);
* ``embedded_target`` - the name of the embedded server (``protobench serve``)
  started when a run has no ``--target``, or ``None``;
* ``latency_kinds`` - what each op's latency measures, when not a round trip
  (see :data:`LATENCY_KINDS`); the report shows a total latency only across
  ops of one kind;
* ``passive_ops`` - ops that only hold sessions (no exchange is expected);
* :meth:`ProtocolPlugin.open_session` - open one virtual user's session for a group;
* optionally :meth:`ProtocolPlugin.discover` - ask a target what it has and fit a
  profile to it (``protobench discover``).

The engine owns the event loop, the clock, pacing and recording. A session
only performs the protocol exchange. There are three kinds of session:

:class:`CallbackSession`
    The fastest path. ``submit(done)`` starts one exchange and returns at once;
    the session calls ``done(None, nbytes)`` when the reply is complete, or
    ``done(OpError(...), 0)`` when it failed. No task or future per request.
:class:`AsyncSession`
    ``await call()`` performs one exchange and returns the bytes received, or
    raises :class:`OpError`. Suits plugins built on async libraries.
:class:`StreamSession`
    ``await run(recorder)`` runs until cancelled and records what it receives
    itself (subscribers, COV notifications, server pushes).

Every library exception is mapped to :class:`~protobench.vocab.errors.OpError`
with an :class:`~protobench.vocab.errors.ErrorClass` at the plugin's I/O boundary
and nowhere else (the taxonomy is :mod:`protobench.vocab.errors`).
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationInfo

from protobench.protocols.timestamps.clock import Stamps
from protobench.protocols.timestamps.reactor import Reactor
from protobench.redaction import redact_text, redact_url
from protobench.vocab.errors import OpError
from protobench.vocab.recorder import Recorder, Tally


class StrictModel(BaseModel):
    """Base of every options and parameters model: unknown keys and nan/inf are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


BEFORE_OVERRIDES = "before_overrides"
"""Validation context key set while a profile's own tables are checked, before the run's
overrides (``--opt``...) are applied: see :func:`overrides_applied`."""


def overrides_applied(info: ValidationInfo) -> bool:
    """Whether the values validated are the run's final ones (the overrides applied).

    A model validator that judges several options together, or reads the
    environment, returns early while this is false: a profile's own table may be
    completed by ``--opt`` (a built-in's ids by the user's), so only the merged
    table can be judged.
    """
    return not (info.context or {}).get(BEFORE_OVERRIDES, False)


class NoParams(StrictModel):
    """Parameters of an operation that takes none."""


SECRET = "<secret>"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token"}
)
"""Header names whose values are always secret, in every protocol."""
_CREDENTIAL_WORDS = ("auth", "token", "secret", "password", "passwd", "api-key", "apikey")


def is_secret_header(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a header's value is secret: a known name, a listed one, or a credential's name."""
    lowered = name.lower()
    return (
        lowered in SECRET_HEADERS
        or lowered in extra
        or any(word in lowered for word in _CREDENTIAL_WORDS)
        or "cookie" in lowered
    )


def redact_headers(headers: Mapping[str, Any], extra: frozenset[str]) -> dict[str, Any]:
    """``headers`` with the values of secret headers replaced by ``"<secret>"``."""
    return {k: (SECRET if is_secret_header(str(k), extra) else v) for k, v in headers.items()}


LATENCY_KINDS = ("round_trip", "to_ack", "one_way", "local_write")
"""What an op's latency measures: ``round_trip`` request to reply; ``to_ack`` send to the
peer's acknowledgement (MQTT PUBACK); ``one_way`` one end's send to the other end's receipt
(a subscriber's end-to-end); ``local_write`` the send into the local socket only."""
ROUND_TRIP = "round_trip"


Done = Callable[[OpError | None, int], None]
"""Completion callback of a :class:`CallbackSession`: ``(error or None, bytes)``."""


@dataclass(frozen=True)
class SessionContext:
    """What a session is told when it opens.

    ``index`` is the session's index among all sessions of its group across all
    worker processes, ``worker`` the worker process index; both are stable for a
    run, so plugins can derive client ids, invoke-id ranges or payload tags.
    ``options`` and ``params`` carry secret values in clear: a session may use
    them but never log them. ``count(name, n)`` adds to a named counter of the
    group (``resent``, ``stray``...), for what is not an exchange's outcome.
    ``sent`` is the group's tally of bytes sent: a session adds what it writes
    once it is open (``sent.n += size``; the handshakes of opening are not counted).

    ``stamps`` are the times of the session's exchange in flight: its send
    sets ``stamps.sent`` immediately before the syscall that sends a request
    (:meth:`~protobench.protocols.timestamps.clock.Stamps.stamp_send`, or a
    stamped transport's ``write_request``), and a stamped transport sets
    ``stamps.received`` from the kernel (see :mod:`protobench.protocols.timestamps`).
    ``reactor`` is given when the run reads the kernel's clock: a session that
    can connects through it (:func:`~protobench.protocols.timestamps.transport.open_stamped`);
    ``None`` is the user clock (the loop's own transports).
    """

    target: str
    group: str
    op: str
    index: int
    worker: int
    params: StrictModel
    options: StrictModel
    timeout: float
    count: Callable[[str, int], None] = field(default=lambda name, n: None, compare=False)
    sent: Tally = field(default_factory=Tally, compare=False)
    stamps: Stamps = field(default_factory=Stamps, compare=False)
    reactor: Reactor | None = field(default=None, compare=False)


class Session(abc.ABC):
    """One virtual user's connection and state. ``close`` must be idempotent.

    ``negotiated`` names the application protocol the session's connection got when
    the plugin offers a choice (HTTP/2's ``h2``, ``h2c``, or ``http/1.1`` after an
    ALPN fallback); the report counts each op's sessions by it. ``None``: nothing to say.
    """

    negotiated: str | None = None

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the connection; never raises."""

    def stopping(self) -> None:
        """The run issues no more exchanges (the drain begins); e.g. announce a final count."""
        return None


class CallbackSession(Session):
    """A session driven by callbacks: the engine's fastest path."""

    @abc.abstractmethod
    def submit(self, done: Done) -> None:
        """Start one exchange; call ``done`` exactly once when it ends."""


class AsyncSession(Session):
    """A session whose exchange is a coroutine."""

    @abc.abstractmethod
    async def call(self) -> int:
        """Perform one exchange; return bytes received or raise :class:`OpError`."""


class StreamSession(Session):
    """A session that receives on its own and records what it receives."""

    @abc.abstractmethod
    async def run(self, recorder: Recorder) -> None:
        """Receive until cancelled, recording every message in ``recorder``."""

    def settled(self) -> bool:
        """True when nothing more is on its way: the drain ends early once all are settled."""
        return True


@dataclass(frozen=True, slots=True)
class DiscoverRequest:
    """What ``protobench discover`` asks a plugin: the target, its options, a per-request bound.

    ``options`` is the plugin's options model, validated from ``--opt`` (secrets in
    clear: use, never print); ``profile_name`` names the fitted profile.
    """

    url: str
    options: StrictModel
    timeout: float
    profile_name: str


@dataclass(frozen=True, slots=True)
class Discovery:
    """What a target has (``summary``, for the terminal) and a profile fitted to it (TOML)."""

    summary: str
    profile: str


def _redacting(check: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    """``check`` whose ``ValueError`` message has every URL password hidden."""

    @functools.wraps(check)
    def checked(self: Any, url: str) -> None:
        try:
            check(self, url)
        except ValueError as exc:
            raise ValueError(redact_text(str(exc))) from None

    return checked


class ProtocolPlugin(abc.ABC):
    """A protocol plugin. Subclasses set the class variables and open sessions.

    A subclass's own :meth:`check_target` is wrapped so that its error message
    never shows a URL's password, whatever the plugin put in it.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "check_target" in cls.__dict__:
            cls.check_target = _redacting(cls.__dict__["check_target"])  # type: ignore[method-assign,assignment]

    name: ClassVar[str]
    description: ClassVar[str] = ""
    options: ClassVar[type[StrictModel]] = NoParams
    operations: ClassVar[Mapping[str, type[StrictModel]]]
    embedded_target: ClassVar[str | None] = None
    secret_options: ClassVar[frozenset[str]] = frozenset()
    """Option names whose values are secrets (never stored nor printed)."""
    url_schemes: ClassVar[tuple[str, ...]] = ()
    """The target URL schemes this protocol accepts (empty: any)."""
    counts_connects: ClassVar[bool] = False
    """Whether sessions count their transport connections themselves (``ctx.count("connects",
    n)``: several per session, or one shared); otherwise the engine counts one per open."""
    connection_oriented: ClassVar[bool] = True
    """Whether sessions hold transport connections (TCP, TLS, WebSocket); false for a
    datagram protocol (BACnet/IP over UDP), whose target memory is never per connection."""
    latency_kinds: ClassVar[Mapping[str, str]] = {}
    """Op name -> one of :data:`LATENCY_KINDS`, for ops whose latency is not a round trip."""
    passive_ops: ClassVar[frozenset[str]] = frozenset()
    """Ops that hold a session and exchange nothing by design (MQTT ``idle``): a run of them
    is judged by its sessions and down time, never by exchanges it was not meant to make."""
    discover_by_scheme: ClassVar[bool] = False
    """Whether ``protobench discover URL`` picks this plugin by the URL's scheme alone (its
    ``url_schemes`` are its own, as ``bacnet://``); otherwise ``protobench discover NAME URL``."""

    def latency_kind(self, op: str, params: Mapping[str, Any] | None = None) -> str:
        """What the latency of ``op`` with a group's ``params`` measures (:data:`LATENCY_KINDS`).

        The default reads :attr:`latency_kinds`; a plugin whose kind depends on
        the params (MQTT publish: a local write at QoS 0, to the ack at QoS 1/2)
        overrides it.
        """
        del params
        return self.latency_kinds.get(op, ROUND_TRIP)

    def connection_share(
        self, op: str, params: Mapping[str, Any], options: Mapping[str, Any], target: str | None
    ) -> int:
        """How many sessions of a group of ``op`` share one connection (1: none share).

        Called when the plan is made, with the group's parameters and the
        profile's options (both as given, already valid on their own) and the
        target URL (``None``: the embedded target). A protocol that multiplexes
        exchanges on a connection (HTTP/2's streams) returns how many run on
        each: the group's ``count`` (and ``--connections``) is then its
        connections, and it runs ``count`` × this many sessions. Raise
        ``ValueError`` saying what does not fit (a parameter that needs an
        option, an option that needs another target).
        """
        del op, params, options, target
        return 1

    def diagnose(self, ops: Mapping[str, Mapping[str, int]]) -> list[str]:
        """Findings about the run from each op's counters (sustain and drain), one line each.

        ``ops`` maps each group's op name to its counter totals, beside its
        exchanges: ``ok`` and ``errors:CLASS`` (``vocab.counters.OK_TOTAL`` and
        ``ERRORS_PREFIX``), so a diagnosis speaks of the ops the profile has. A plugin that
        can tell where its protocol's bottleneck was (a subscriber backlog, a
        broker dropping messages) says so here; the findings appear in the
        report's ``verdicts.findings`` and in the summary. The default finds nothing.
        """
        del ops
        return []

    def memory_per_connection(self, ops: Collection[str]) -> bool:
        """Whether the target's memory growth over a run of ``ops`` is its connections'
        (the report's ``rss_per_connection``). The default: for a connection-oriented
        protocol. A plugin whose ops make the target hold other state (a broker's message
        queues) says no for them."""
        del ops
        return self.connection_oriented

    def check_target(self, url: str) -> None:
        """Raise ``ValueError`` saying what was expected when ``url`` cannot be a target.

        Called when the plan is made, so a wrong ``--target`` is a bad-input
        error (exit 2) instead of connection errors during the run. The default
        checks the scheme against ``url_schemes``; plugins may check more.
        """
        scheme = url.partition("://")[0].lower() if "://" in url else ""
        if self.url_schemes and scheme not in self.url_schemes:
            expected = " or ".join(f"{s}://" for s in self.url_schemes)
            raise ValueError(f"bad URL {redact_url(url)!r}: expected a {expected} URL")

    @abc.abstractmethod
    async def open_session(self, ctx: SessionContext) -> Session:
        """Open one session for ``ctx.op``; raise :class:`OpError` on failure."""

    @classmethod
    def discovers(cls) -> bool:
        """Whether the plugin implements :meth:`discover`."""
        return cls.discover is not ProtocolPlugin.discover

    async def discover(self, request: DiscoverRequest) -> Discovery:
        """Ask the target at ``request.url`` what it has; fit a profile to it.

        Optional (``protobench discover`` lists the plugins that implement it). The
        URL has passed :meth:`check_target`; a target that does not answer (or
        refuses the login) is an :class:`OpError` naming what failed.
        """
        raise NotImplementedError(f"the {self.name} protocol does not discover")

    def redact(
        self, values: Mapping[str, Any], options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """``values`` (an options table or a group's params) with secrets replaced.

        Hides the keys listed in ``secret_options`` and the values of secret
        headers in a ``headers`` table (see :func:`is_secret_header`; a
        ``secret_headers`` list in ``values`` or ``options`` names more).
        Plugins with secrets elsewhere in structured values extend it.
        """
        out = {k: (SECRET if k in self.secret_options else v) for k, v in values.items()}
        headers = out.get("headers")
        if isinstance(headers, Mapping):
            listed: set[str] = set()
            for source in (options or {}, values):
                names = source.get("secret_headers")
                if isinstance(names, list | tuple):
                    listed.update(str(name).lower() for name in names)
            out["headers"] = redact_headers(headers, frozenset(listed))
        return out
