"""Discovery of plugins through entry points (protocols here, targets alike).

Names are listed without importing any plugin; a plugin is imported only when a
run or a command needs it, and an import failure becomes a clear
:class:`PluginError` instead of a traceback.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from protobench.protocols.base import Protocol

GROUP = "protobench.protocols"


class PluginError(Exception):
    """A plugin that is unknown or cannot be loaded."""


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
        cls: Any = found.load()
    except Exception as exc:
        raise PluginError(f"{what} {name!r} failed to load: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PluginError(f"{what} {name!r}: entry point is not a {base.__name__} subclass")
    return cls()


def names() -> list[str]:
    """Names of every installed protocol plugin, sorted."""
    return entry_point_names(GROUP)


def load(name: str) -> Protocol:
    """The protocol plugin named ``name``."""
    plugin = load_entry_point(GROUP, name, Protocol, "protocol")
    assert isinstance(plugin, Protocol)
    return plugin
