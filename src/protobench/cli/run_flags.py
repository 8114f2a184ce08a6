"""The run settings' flags: one Typer option per setting of the table, for ``run`` and ``sweep``.

:func:`takes_run_flags` puts in place of a command's ``flags: RunFlags``
parameter one option per setting that has a flag
(:data:`~protobench.profiles.settings.FLAGGED`, in the table's order, with its
names and ``--help`` line); the command gets their values as a
:class:`RunFlags` and calls :meth:`RunFlags.overrides` when it wants them
parsed (a bad value exits 2 naming its flag). A setting added to the table is a
flag of every such command, with nothing to write here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from protobench.cli.common import parse_items, parse_value, setting_option
from protobench.profiles.settings import FLAGGED, Overrides, Setting


@dataclass(frozen=True)
class RunFlags:
    """The values of the run settings' flags as given (``None``: not given), by setting name.

    ``from_env``: the settings whose value came from their environment variable
    (``PROTOBENCH_TARGET``...: :attr:`Setting.env`), not from the command line.
    """

    given: Mapping[str, Any]
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


def _parse(spec: Setting, raw: Any, from_env: bool) -> Any:
    flag, kind = str(spec.flag), spec.kind
    if from_env:  # an error names where the value came from
        flag = f"{flag} (from ${spec.env})"
    if kind.collect is not None:
        return kind.collect(parse_items(raw, kind.parse, flag))
    if isinstance(raw, str):
        return parse_value(raw, kind.parse, flag)
    return raw  # Typer parsed it (an int)


def _option(spec: Setting) -> Any:
    """The annotation of a setting's flag: its value as Typer parses it, and its option."""
    value_type = list[str] if spec.kind.repeatable else spec.kind.option
    return Annotated[value_type | None, setting_option(spec)]


_CONTEXT = "run_flags_context"
"""The parameter the flags' context comes in (a command takes none of its own)."""


def _source(ctx: typer.Context, name: str) -> str | None:
    """Where a parameter's value came from: ``COMMANDLINE``, ``ENVIRONMENT``, ``DEFAULT``..."""
    source = ctx.get_parameter_source(name)
    return None if source is None else source.name


def takes_run_flags[R](command: Callable[..., R]) -> Callable[..., R]:
    """``command`` with its ``flags: RunFlags`` parameter made one option per run setting."""
    signature = inspect.signature(command, eval_str=True)
    (marker,) = (p for p in signature.parameters.values() if p.annotation is RunFlags)
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param is marker:
            params.extend(
                inspect.Parameter(s.name, param.kind, default=None, annotation=_option(s))
                for s in FLAGGED
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
        from_env = frozenset(s.name for s in FLAGGED if _source(ctx, s.name) == "ENVIRONMENT")
        return command(**values, **{marker.name: RunFlags(given, from_env)})

    with_flags.__signature__ = shown  # type: ignore[attr-defined]
    with_flags.__annotations__ = {p.name: p.annotation for p in params}
    return with_flags
