"""The contract of an embedded target, and how runs start one in its own process.

An embedded target is a subclass of :class:`EmbeddedTarget` registered under
the entry point group ``protobench.targets``. ``protobench serve NAME`` runs it
in the foreground; a run without ``--target`` starts
``python -m protobench serve NAME --port 0 --announce`` as a child process and
reads one JSON line from its stdout, the :class:`Announcement`:
``{"url": ..., "kind": ..., "pid": ...}`` (``kind`` says what server it really
is, e.g. "mosquitto 2.0.11"; ``pid`` is the process doing the serving, which
the run's resource sampler watches).
Targets always bind loopback addresses.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from protobench.protocols.base import NoParams, StrictModel
from protobench.vocab.exceptions import BadInput


class ServeError(BadInput):
    """A target that cannot be served as asked (bad option, non-loopback host, no server)."""


@dataclass(frozen=True)
class Announcement:
    """What a started target tells: where it listens, what it is, which process serves."""

    url: str
    kind: str
    pid: int = field(default_factory=os.getpid)


Ready = Callable[[Announcement], None]
"""Called once the target listens."""


class EmbeddedTarget(abc.ABC):
    """A server that protobench can start for a run or for ``protobench serve``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    default_port: ClassVar[int] = 0
    options: ClassVar[type[StrictModel]] = NoParams
    secret_options: ClassVar[frozenset[str]] = frozenset()
    """Option names whose values are secrets (never stored nor printed)."""

    @abc.abstractmethod
    async def serve(self, host: str, port: int, options: StrictModel, ready: Ready) -> None:
        """Listen on ``host:port`` (0 = any free port), call ``ready``, serve until cancelled.

        Runs on the asyncio (uvloop) event loop of the ``serve`` process. A
        target that needs another process (mosquitto) starts it here and stops
        it when cancelled.
        """
