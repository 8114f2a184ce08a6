"""A fixture helper: the embedded HTTP target in its own process, with its served count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from protobench.targets.http import STATS_PATH
from tests.support.targets import ServedProcess, served


class ServedHttpTarget(ServedProcess):
    def served(self) -> int:
        """Responses the target has written so far."""
        return int(self.get_json(STATS_PATH)["served"])


@contextmanager
def http_target(*flags: str) -> Iterator[ServedHttpTarget]:
    """Start ``protobench serve http --port 0 FLAGS``; stop it afterwards."""
    with served("http", *flags) as process:
        yield ServedHttpTarget(process.url, process.process)
