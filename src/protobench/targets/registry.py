"""Discovery of embedded targets through the ``protobench.targets`` entry points."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protobench.protocols.registry import entry_point_names, load_entry_point

if TYPE_CHECKING:
    from protobench.targets.base import EmbeddedTarget

GROUP = "protobench.targets"


def names() -> list[str]:
    """Names of every installed embedded target, sorted."""
    return entry_point_names(GROUP)


def load(name: str) -> EmbeddedTarget:
    """The embedded target named ``name``."""
    from protobench.targets.base import EmbeddedTarget  # noqa: PLC0415 - pydantic: not for --help

    target = load_entry_point(GROUP, name, EmbeddedTarget, "embedded target")
    assert isinstance(target, EmbeddedTarget)
    return target
