"""Discovery of plugins through entry points (protocols here, targets alike).

Names are listed without importing any plugin; a plugin is imported only when a
run or a command needs it (loading one imports that plugin's module alone), and
an import failure becomes a clear :class:`PluginError` instead of a traceback.
A plugin whose library comes with an optional extra that is not installed says
which one: ``the bacnet-ip protocol needs `pip install 'protobench[bacnet]'```.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from protobench.vocab.exceptions import BadInput

if TYPE_CHECKING:
    from protobench.protocols.base import ProtocolPlugin

GROUP = "protobench.protocols"
EXTRAS = {
    "bac_py": "bacnet",
    "hs_py": "haystack",
    "uvicorn": "haystack",
    "fastapi": "haystack",
    "ray": "ray",
}
"""Top-level modules that come with an optional extra of protobench, and that extra."""


class PluginError(BadInput):
    """A plugin that is unknown or cannot be loaded."""


def missing_extra(exc: BaseException) -> str | None:
    """The extra to install when ``exc`` is the import error of one of its modules, else None."""
    if not isinstance(exc, ImportError) or not exc.name:
        return None
    return EXTRAS.get(exc.name.partition(".")[0])


def needs(extra: str, who: str) -> str:
    """``the bacnet-ip protocol needs `pip install 'protobench[bacnet]'```."""
    return f"{who} needs `pip install 'protobench[{extra}]'`"


@contextmanager
def require(name: str, what: str) -> Iterator[None]:
    """Turn a missing extra's import error in the block into a :class:`PluginError` naming it."""
    try:
        yield
    except ImportError as exc:
        extra = missing_extra(exc)
        if extra is None:
            raise
        raise PluginError(needs(extra, f"the {name} {what}")) from exc


def _entry_points(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def entry_point_names(group: str) -> list[str]:
    """Names registered in an entry point group, sorted."""
    return sorted(_entry_points(group))


@cache
def load_entry_point(group: str, name: str, base: type, what: str) -> object:
    """Instantiate the plugin ``name`` of ``group`` (a ``base`` subclass) once per process."""
    found = _entry_points(group).get(name)
    if found is None:
        known = ", ".join(entry_point_names(group)) or "none"
        raise PluginError(f"unknown {what} {name!r} (installed: {known})")
    try:
        with require(name, what):
            cls: Any = found.load()
    except PluginError:
        raise
    except Exception as exc:
        raise PluginError(f"{what} {name!r} failed to load: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PluginError(f"{what} {name!r}: entry point is not a {base.__name__} subclass")
    return cls()


def names() -> list[str]:
    """Names of every installed protocol plugin, sorted."""
    return entry_point_names(GROUP)


def load(name: str) -> ProtocolPlugin:
    """The protocol plugin named ``name``."""
    from protobench.protocols.base import ProtocolPlugin  # noqa: PLC0415 - pydantic: not for --help

    plugin = load_entry_point(GROUP, name, ProtocolPlugin, "protocol")
    assert isinstance(plugin, ProtocolPlugin)
    return plugin
