"""Discovery of embedded targets through the ``protobench.targets`` entry points."""

from __future__ import annotations

from protobench.protocols.registry import entry_point_names, load_entry_point
from protobench.targets.base import EmbeddedTarget

GROUP = "protobench.targets"


def names() -> list[str]:
    """Names of every installed embedded target, sorted."""
    return entry_point_names(GROUP)


def load(name: str) -> EmbeddedTarget:
    """The embedded target named ``name``."""
    target = load_entry_point(GROUP, name, EmbeddedTarget, "embedded target")
    assert isinstance(target, EmbeddedTarget)
    return target
