"""A protocol's one-line runs: ``protobench run URL`` and the flags that build its profile.

A protocol that runs from a URL declares a :class:`OneLine`: the URL schemes
it takes, the op of the one group it runs, and its :class:`ProtocolFlag` rows.
Each row is a flag of ``run`` and ``sweep`` (its names, placeholder and
``--help`` line) and says which keys of the profile it sets: the protocol's
``[options]`` (``scope = "options"``) or the op's parameters (``"params"``),
through ``to`` (the flag's value -> those keys' values). The command line
derives its options from the rows (:mod:`protobench.cli.run_flags`), the
profile of a URL is built from them (:mod:`protobench.profiles.oneline`), and a
test checks every key against the plugin's own models. A new flag is one row.

Nothing here imports pydantic or a protocol library: ``--help`` reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from protobench.vocab.flagnames import FlagNames

Scope = Literal["options", "params"]


@dataclass(frozen=True, kw_only=True)
class ProtocolFlag(FlagNames):
    """One flag of a protocol's one-line runs.

    ``name`` is the flag's parameter name; its names, placeholder and
    ``--help`` line are :class:`FlagNames`' (it always has a long name).
    ``parse`` reads one value (``ValueError`` says what was expected; ``None``:
    a switch, given or not); a ``repeatable`` flag's values come as a list.
    ``to`` turns the value (or the list) into the keys it sets in ``scope``;
    ``keys`` names them (an error about one of them names this flag). A
    ``secret`` flag's value is never shown, not even in an error.
    """

    name: str
    scope: Scope
    keys: tuple[str, ...]
    to: Callable[[Any], Mapping[str, Any]]
    parse: Callable[[str], Any] | None = str
    repeatable: bool = False
    secret: bool = False

    @property
    def switch(self) -> bool:
        """A flag without a value (``--insecure``)."""
        return self.parse is None


@dataclass(frozen=True, kw_only=True)
class OneLine:
    """How a protocol runs from a URL: its schemes, its op and its flags.

    ``sessions`` is the one group's default count (the ``-c`` of a run that
    gives none).
    """

    protocol: str
    schemes: tuple[str, ...]
    op: str
    flags: tuple[ProtocolFlag, ...]
    sessions: int = 50


def key(name: str) -> Callable[[Any], Mapping[str, Any]]:
    """``to`` of a flag that sets one key to its value as read."""
    return lambda value: {name: value}


def switch(name: str, value: Any) -> Callable[[Any], Mapping[str, Any]]:
    """``to`` of a switch that sets ``name`` to ``value`` when given."""
    return lambda _given: {name: value}
