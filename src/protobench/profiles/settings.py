"""The run settings, declared once: :class:`RunSettings` is the table.

Each field of :class:`RunSettings` is one setting: its name is the profile key,
the plan's field and the override's name; its type and default are the
field's; :func:`setting` gives the rest: the :class:`Kind` of its value (how a
flag, a ``sweep --vary`` level and a profile value are read), its flag (long,
short, the docs' placeholder, the ``--help`` line), its bounds and check, and
whether ``sweep --vary`` takes it. Derived from it: the profile model
(:data:`protobench.profiles.model.Profile`), :class:`Overrides`, the fields of
:class:`~protobench.engine.plan.RunPlan` (a subclass), the flags of ``run`` and
``sweep`` (:mod:`protobench.cli.run_flags`), the ``--vary`` keys, and a test
that the docs list every setting with its flag. A new setting is one field
here plus its use.

Nothing here imports pydantic: the command line's ``--help`` reads this table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Final, cast

from protobench.vocab.flagnames import FlagNames
from protobench.vocab.thresholds import parse_threshold
from protobench.vocab.units import MAX_DURATION, parse_duration, parse_rate, parse_scalar

MAX_SESSIONS = 1_000_000
"""The most sessions of one group, and the most ``connections``."""
MAX_PROCESSES = 256
MAX_REQUESTS = 10**12
"""The largest request count (``requests``, ``-n``)."""
NO_TIME_LIMIT = MAX_DURATION
"""The sustain's length when a request count ends it and no duration was given (30 days)."""


def _count(text: str) -> int:
    """A whole number >= 1 from a ``--vary`` level (a flag's is parsed by Typer)."""
    number = int(text)
    if number < 1:
        raise ValueError("expected a whole number >= 1")
    return number


def parse_pair(text: str) -> tuple[str, Any]:
    """``"a=1"`` -> ``("a", 1)``: the value as :func:`parse_scalar` reads it."""
    key, eq, raw = text.partition("=")
    if not eq or not key.strip():
        raise ValueError("expected KEY=VALUE")
    return key.strip(), parse_scalar(raw)


def positive(what: str) -> Callable[[float], float]:
    """A check that a value is more than 0 (``ValueError`` says ``expected WHAT > 0``)."""

    def check(value: float) -> float:
        if value <= 0:
            raise ValueError(f"expected {what} > 0")
        return value

    return check


def _interval(value: float) -> float:
    if not 0.05 <= value <= 60:
        raise ValueError("expected an interval between 50ms and 60s")
    return value


def _thresholds(value: tuple[str, ...]) -> tuple[str, ...]:
    for expr in value:
        parse_threshold(expr)
    return value


CLOCKS: Final = ("kernel", "user")
"""Where exchange times come from (:mod:`protobench.protocols.timestamps`)."""


def _clock(value: str) -> str:
    if value not in CLOCKS:
        raise ValueError(f"expected {' or '.join(CLOCKS)}, got {value!r}")
    return value


def _replace(_old: Any, new: Any) -> Any:
    return new


def _switch(text: str) -> bool:
    """``true``/``false`` (or ``yes``/``no``, ``on``/``off``, ``1``/``0``): a ``--vary`` level."""
    value = text.strip().lower()
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"expected true or false, got {text[:40]!r}")


PROFILERS = ("auto", "py-spy", "perf", "pprof")
"""The target's profilers (``profiler``): ``auto`` picks py-spy or perf from the process."""
PPROF_EXTRA = ("heap", "mutex")
"""The Go profiles besides the CPU's that ``pprof_extra`` may ask for."""


def _profiler(value: str) -> str:
    if value not in PROFILERS:
        raise ValueError(f"expected one of {', '.join(PROFILERS)}, got {value[:40]!r}")
    return value


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")) or len(value) > 2000 or " " in value:
        raise ValueError(f"expected an http:// or https:// URL, got {value[:60]!r}")
    return value


def _pprof_extra(value: tuple[str, ...]) -> tuple[str, ...]:
    for kind in value:
        if kind not in PPROF_EXTRA:
            raise ValueError(f"expected {' or '.join(PPROF_EXTRA)}, got {kind[:40]!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Kind:
    """How a setting's value is written: as a flag, a ``--vary`` level, a profile value.

    ``parse`` reads one flag value or ``--vary`` level (``ValueError`` says what
    was expected); ``option`` is the flag's type when Typer parses it (``int``);
    ``coerce`` reads a profile's value before its type is checked (``"30s"``).
    A repeatable kind's flag is given once per item: ``collect`` makes the items
    the value, and ``merge`` adds the flag's value to the profile's.
    """

    parse: Callable[[str], Any]
    option: type = str
    coerce: Callable[[object], float] | None = None
    collect: Callable[[list[Any]], Any] | None = None
    merge: Callable[[Any, Any], Any] = _replace

    @property
    def repeatable(self) -> bool:
        return self.collect is not None


TEXT: Final = Kind(parse=str)
DURATION: Final = Kind(parse=parse_duration, coerce=parse_duration)
"""Seconds: ``"30s"``, ``"500ms"``, ``"2m"`` or a number."""
RATE: Final = Kind(parse=parse_rate, coerce=parse_rate)
"""Per second: ``"5000/s"``, ``"300/m"`` or a number."""
COUNT: Final = Kind(parse=_count, option=int)
SWITCH: Final = Kind(parse=_switch, option=bool)
"""On or off: a flag without a value (``--profile-target``), ``true``/``false`` in a profile."""
NAMES: Final = Kind(parse=str, collect=tuple)
"""Repeatable names; the flag's replace the profile's."""
EXPRESSIONS: Final = Kind(parse=str, collect=tuple, merge=lambda old, new: (*old, *new))
"""Repeatable; the flag's items follow the profile's."""
PAIRS: Final = Kind(parse=parse_pair, collect=dict, merge=lambda old, new: {**old, **new})
"""``KEY=VALUE``, repeatable; merged into the profile's table key by key (``--vary NAME.KEY``)."""


@dataclass(frozen=True, kw_only=True)
class Setting(FlagNames):
    """One row of the table: a field of :class:`RunSettings` and what :func:`setting` says of it.

    Its flag's names, placeholder (in ``--help`` and the docs) and ``--help``
    line are :class:`FlagNames`' (the help line is also its description in the
    profile schema); ``flag`` is ``None`` for a profile key that no flag
    overrides. ``hint`` follows an error about the flag's value; ``ge`` and
    ``le`` bound it; ``check`` validates it after its type (``ValueError`` says
    what was expected); ``vary``: ``sweep --vary`` takes it (a table as ``NAME.KEY``).
    """

    name: str = ""
    kind: Kind
    hint: str = ""
    vary: bool = False
    ge: float | None = None
    le: float | None = None
    check: Callable[[Any], Any] | None = None

    @property
    def vary_key(self) -> str:
        """The key ``--vary`` names it by."""
        return f"{self.name}.KEY" if self.kind.repeatable else self.name

    @property
    def env(self) -> str | None:
        """The environment variable that gives the flag's value when it is not given.

        ``PROTOBENCH_TARGET``, ``PROTOBENCH_DURATION``...: one per flag that takes
        one value (a repeatable flag takes none: an expression holds spaces).
        """
        if self.flag is None or self.kind.repeatable:
            return None
        return f"PROTOBENCH_{self.name.upper()}"


_SPEC = "protobench.setting"


def setting[T](
    kind: Kind,
    default: T,
    *,
    flag: str | None = None,
    short: str | None = None,
    aliases: tuple[str, ...] = (),
    hint: str = "",
    metavar: str = "",
    help: str = "",
    vary: bool = False,
    ge: float | None = None,
    le: float | None = None,
    check: Callable[[Any], Any] | None = None,
) -> T:
    """A field of :class:`RunSettings`: its default, and its :class:`Setting` in its metadata."""
    spec = Setting(
        kind=kind,
        flag=flag,
        short=short,
        aliases=aliases,
        hint=hint,
        metavar=metavar,
        help=help,
        vary=vary,
        ge=ge,
        le=le,
        check=check,
    )
    if isinstance(default, dict):  # a new table for every instance
        return cast("T", field(default_factory=dict, metadata={_SPEC: spec}))
    return field(default=default, metadata={_SPEC: spec})


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """The run settings: the keys of a profile that a run is given, and their flags.

    The order is the flags' order in ``run --help`` and ``sweep --help``.
    """

    target: str | None = setting(
        TEXT,
        "embedded",
        flag="--target",
        short="-t",
        metavar="URL",
        help="Target URL (default: embedded).",
    )
    """``embedded``, ``embedded:NAME`` or a URL (``None`` in a plan: the embedded target)."""
    duration: float = setting(
        DURATION,
        10.0,
        flag="--duration",
        short="-d",
        aliases=("-z",),
        hint="(-d is the duration; a request body is --data BODY, curl's -d)",
        metavar="DURATION",
        help="Sustain phase, e.g. 30s (-z: oha's and hey's name).",
        vary=True,
        check=positive("a duration"),
    )
    warmup: float = setting(
        DURATION, 2.0, flag="--warmup", metavar="DURATION", help="Warmup phase, e.g. 5s.", vary=True
    )
    connections: int | None = setting(
        COUNT,
        None,
        flag="--connections",
        short="-c",
        metavar="N",
        help="Sessions of the back-to-back groups.",
        vary=True,
        ge=1,
        le=MAX_SESSIONS,
    )
    """Rescales the back-to-back groups (:func:`protobench.engine.plan.resolve`)."""
    requests: int | None = setting(
        COUNT,
        None,
        flag="--requests",
        short="-n",
        metavar="N",
        help="Stop after N exchanges (then no warmup or time limit unless given).",
        vary=True,
        ge=1,
        le=MAX_REQUESTS,
    )
    """The sustain phase ends after this many exchanges (every group's, over every worker);
    with it, ``warmup`` and ``duration`` are only what is given (:func:`counted_limits`)."""
    rate: float | None = setting(
        RATE,
        None,
        flag="--rate",
        short="-r",
        metavar="RATE",
        help="Open model: total rate, e.g. 20000/s.",
        vary=True,
    )
    ramp_to: float | None = setting(
        RATE,
        None,
        flag="--ramp-to",
        metavar="RATE",
        help="Open model: ramp linearly to this rate.",
        vary=True,
    )
    processes: int | None = setting(
        COUNT,
        None,
        flag="--processes",
        short="-p",
        metavar="N",
        help="Worker processes (default: cores).",
        vary=True,
        ge=1,
        le=MAX_PROCESSES,
    )
    """``None``: one per core."""
    interval: float = setting(
        DURATION,
        1.0,
        flag="--interval",
        metavar="DURATION",
        help="Report interval, e.g. 1s.",
        vary=True,
        check=_interval,
    )
    timeout: float = setting(
        DURATION,
        5.0,
        flag="--timeout",
        metavar="DURATION",
        help="Per-operation timeout.",
        vary=True,
        check=positive("a timeout"),
    )
    pacing_precision: float = setting(
        DURATION,
        0.0001,
        flag="--pacing-precision",
        metavar="DURATION",
        help="Open model: sends may batch this late (default 100us).",
        le=0.1,
    )
    """Open model: see :data:`~protobench.engine.schedule.PACING_PRECISION_NS`."""
    clock: str = setting(
        TEXT,
        "kernel",
        flag="--clock",
        metavar="CLOCK",
        help="Exchange times from the kernel's socket timestamps (default, where available)"
        " or from user space.",
        vary=True,
        check=_clock,
    )
    """``kernel``: a request's time is the kernel's send stamp and a reply's its receive stamp,
    where the platform and the protocol give them (else user space, said in a notice);
    ``user``: the engine's own reads of the clock around the send and at the completion."""
    drain: float = setting(
        DURATION, 2.0, help="How long in-flight exchanges may finish after sustain, e.g. 2s."
    )
    """No flag sets it."""
    thresholds: tuple[str, ...] = setting(
        EXPRESSIONS,
        (),
        flag="--threshold",
        metavar="EXPR",
        help="Extra threshold, e.g. 'p99<5ms' (repeatable).",
        check=_thresholds,
    )
    options: dict[str, Any] = setting(  # noqa: RUF009 - a new dict per instance
        PAIRS,
        {},
        flag="--opt",
        short="-o",
        metavar="KEY=VALUE",
        help="Protocol option KEY=VALUE (repeatable).",
        vary=True,
    )
    """Validated by the protocol plugin."""
    serve: dict[str, Any] = setting(  # noqa: RUF009 - a new dict per instance
        PAIRS,
        {},
        flag="--serve-opt",
        metavar="KEY=VALUE",
        help="Embedded target option KEY=VALUE (repeatable).",
        vary=True,
    )
    """Validated by the embedded target."""
    profile_target: bool = setting(
        SWITCH,
        False,
        flag="--profile-target",
        help="Sample the target's stacks during sustain (py-spy, perf or --pprof).",
    )
    """Sample the target process's stacks during sustain (README: Server insight)."""
    profiler: str = setting(
        TEXT,
        "auto",
        flag="--profiler",
        metavar="TOOL",
        help="The target's profiler: auto, py-spy, perf or pprof.",
        check=_profiler,
    )
    profile_rate: float = setting(
        RATE,
        100.0,
        flag="--profile-rate",
        metavar="HZ",
        help="Target samples per second (default 100).",
        ge=1,
        le=1000,
    )
    profile_native: bool = setting(
        SWITCH, False, flag="--profile-native", help="py-spy: sample the target's C frames too."
    )
    pprof: str | None = setting(
        TEXT,
        None,
        flag="--pprof",
        metavar="URL",
        help="Sample a Go target through its net/http/pprof URL.",
        check=_http_url,
    )
    """A Go target's ``net/http/pprof`` base URL: setting it samples the target."""
    pprof_extra: tuple[str, ...] = setting(
        NAMES,
        (),
        flag="--pprof-extra",
        metavar="KIND",
        help="With --pprof: its heap or mutex profile too (repeatable).",
        check=_pprof_extra,
    )


SETTINGS: Final = tuple(
    dataclasses.replace(f.metadata[_SPEC], name=f.name) for f in fields(RunSettings)
)
"""The table's rows, in its order."""
BY_NAME: Final[Mapping[str, Setting]] = MappingProxyType({s.name: s for s in SETTINGS})
FLAGGED: Final = tuple(s for s in SETTINGS if s.flag is not None)
"""The settings a flag overrides, in the flags' order."""
VARY_KEYS: Final = tuple(s.vary_key for s in SETTINGS if s.vary)
"""What ``sweep --vary`` takes: ``duration``, ..., ``options.KEY``, ``serve.KEY``."""


def counted_limits(settings: RunSettings, explicit: Collection[str]) -> RunSettings:
    """``settings`` of a run that its request count ends: no warmup and no time limit
    (:data:`NO_TIME_LIMIT`) unless ``explicit`` (the keys given) names ``warmup`` or ``duration``.

    A count given as a flag comes with only the flags' limits (oha's and hey's ``-n``);
    a profile's ``requests`` key with the file's ``warmup`` and ``duration`` keys too.
    """
    if settings.requests is None:
        return settings
    return dataclasses.replace(
        settings,
        warmup=settings.warmup if "warmup" in explicit else 0.0,
        duration=settings.duration if "duration" in explicit else NO_TIME_LIMIT,
    )


def flag_of(name: str) -> str:
    """The flag that overrides setting ``name`` (named in errors about its value)."""
    return BY_NAME[name].flag or name


def _given(value: object) -> bool:
    return value is not None and not (isinstance(value, tuple | list | dict) and not value)


class Overrides:
    """What the command line changes in a profile: ``Overrides(duration=30.0, rate=5000.0)``.

    Keys are setting names; a value ``None`` or empty is not given, and
    :attr:`values` holds the given ones in the table's order. A given value
    replaces the profile's, or for a repeatable setting is added to it (the
    kind's ``merge``: thresholds follow the profile's, options are merged).
    """

    __slots__ = ("values",)

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(BY_NAME))
        if unknown:
            raise TypeError(f"not a run setting: {', '.join(unknown)}")
        given = {name: values[name] for name in BY_NAME if _given(values.get(name))}
        self.values: Mapping[str, Any] = MappingProxyType(given)

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def __repr__(self) -> str:
        return f"Overrides({', '.join(f'{k}={v!r}' for k, v in self.values.items())})"

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def with_values(self, **values: Any) -> Overrides:
        """These overrides with ``values`` set instead (a sweep's level)."""
        return Overrides(**{**self.values, **values})

    def as_dict(self) -> dict[str, Any]:
        """The overrides that were given, for provenance."""
        return dict(self.values)
