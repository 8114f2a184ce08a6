"""The run settings' flags and the one-line runs' flags: Typer options of ``run`` and ``sweep``.

:func:`takes_run_flags` puts in place of a command's ``flags: RunFlags``
parameter one option per setting that has a flag
(:data:`~protobench.profiles.settings.FLAGGED`, in the table's order, with its
names and ``--help`` line), then one per flag of the protocols that run from a
URL (:data:`protobench.protocols.oneline.FLAGS`: ``-H``, ``-m``, ``--data``...);
the command gets their values as a :class:`RunFlags` and calls
:meth:`RunFlags.overrides` when it wants the settings parsed (a bad value exits
2 naming its flag); the one-line flags are read when a URL's profile is built
(:mod:`protobench.profiles.oneline`). A setting added to the table, or a flag
added to a protocol's one-line table, is a flag of every such command, with
nothing to write here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

import typer

from protobench.cli.common import flag_option, parse_items, parse_value
from protobench.profiles.settings import BY_NAME, FLAGGED, Overrides, Setting
from protobench.protocols.flags import ProtocolFlag
from protobench.protocols.oneline import FLAGS


@dataclass(frozen=True)
class RunFlags:
    """The values of the run settings' flags as given (``None``: not given), by setting name,
    and of the one-line flags (``line``, by flag name: ``None``, ``False`` or ``[]``: not given).

    ``from_env``: the settings whose value came from their environment variable
    (``PROTOBENCH_TARGET``...: :attr:`Setting.env`), not from the command line.
    """

    given: Mapping[str, Any]
    line: Mapping[str, Any] = field(default_factory=dict)
    from_env: frozenset[str] = frozenset()

    def overrides(self) -> Overrides:
        """The given values parsed; a bad one exits 2 naming its flag (and its variable)."""
        return Overrides(
            **{
                s.name: _parse(s, raw, s.name in self.from_env)
                for s in FLAGGED
                if (raw := self.given.get(s.name)) is not None
            }
        )

    def without(self, name: str) -> RunFlags:
        """These flags with setting ``name`` not given (a URL run's target is its URL)."""
        return replace(self, given={**self.given, name: None}, from_env=self.from_env - {name})

    def line_given(self) -> list[ProtocolFlag]:
        """The one-line flags that were given."""
        return [f for f in FLAGS if self.line.get(f.name) not in (None, False, [])]

    def profile_keys(self) -> dict[str, Any]:
        """The settings given as a profile's keys: durations and rates as typed (``"30s"``)."""
        return {
            name: self.given[name] if BY_NAME[name].kind.coerce else value
            for name, value in self.overrides().values.items()
        }


def _parse(spec: Setting, raw: Any, from_env: bool) -> Any:
    flag, kind = str(spec.flag), spec.kind
    parse = kind.parse if not spec.hint else _hinted(kind.parse, spec.hint)
    if from_env:  # an error names where the value came from
        flag = f"{flag} (from ${spec.env})"
    if kind.collect is not None:
        return kind.collect(parse_items(raw, parse, flag))
    if isinstance(raw, str):
        return parse_value(raw, parse, flag)
    return raw  # Typer parsed it (an int)


def _hinted(parse: Callable[[str], Any], hint: str) -> Callable[[str], Any]:
    """``parse`` whose ``ValueError`` says ``hint`` after its own message."""

    def parse_hinted(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise ValueError(f"{exc} {hint}") from None

    return parse_hinted


def _option(spec: Setting) -> Any:
    """The annotation of a setting's flag: its value as Typer parses it, and its option."""
    value_type = list[str] if spec.kind.repeatable else spec.kind.option
    return Annotated[value_type | None, flag_option(spec)]


def _line_option(flag: ProtocolFlag) -> tuple[Any, Any]:
    """The annotation and default of a one-line flag's option."""
    option = flag_option(flag)
    if flag.switch:
        return Annotated[bool, option], False
    value_type = list[str] if flag.repeatable else str
    return Annotated[value_type | None, option], None


_CONTEXT = "run_flags_context"
"""The parameter the flags' context comes in (a command takes none of its own)."""


def _source(ctx: typer.Context, name: str) -> str | None:
    """Where a parameter's value came from: ``COMMANDLINE``, ``ENVIRONMENT``, ``DEFAULT``..."""
    source = ctx.get_parameter_source(name)
    return None if source is None else source.name


def takes_run_flags[R](command: Callable[..., R]) -> Callable[..., R]:
    """``command`` with its ``flags: RunFlags`` parameter made one option per run setting
    and per one-line flag."""
    signature = inspect.signature(command, eval_str=True)
    (marker,) = (p for p in signature.parameters.values() if p.annotation is RunFlags)
    taken = set(signature.parameters)
    clash = taken & ({s.name for s in FLAGGED} | {f.name for f in FLAGS})
    if clash:
        raise TypeError(f"{command.__name__}: a parameter is named as a flag: {sorted(clash)}")
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param is marker:
            params.extend(
                inspect.Parameter(s.name, param.kind, default=None, annotation=_option(s))
                for s in FLAGGED
            )
            for flag in FLAGS:
                annotation, default = _line_option(flag)
                params.append(
                    inspect.Parameter(flag.name, param.kind, default=default, annotation=annotation)
                )
        else:
            params.append(param)
    # Typer gives the context to the parameter of its type: where each value came from.
    params.append(
        inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
    )
    shown = signature.replace(parameters=params)

    @functools.wraps(command)
    def with_flags(*args: Any, **kwargs: Any) -> R:
        bound = shown.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        ctx = values.pop(_CONTEXT)
        given = {s.name: values.pop(s.name) for s in FLAGGED}
        line = {f.name: values.pop(f.name) for f in FLAGS}
        from_env = frozenset(s.name for s in FLAGGED if _source(ctx, s.name) == "ENVIRONMENT")
        return command(**values, **{marker.name: RunFlags(given, line, from_env)})

    with_flags.__signature__ = shown  # type: ignore[attr-defined]
    with_flags.__annotations__ = {p.name: p.annotation for p in params}
    return with_flags
