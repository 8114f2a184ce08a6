"""Where protobench keeps its files: ``$PROTOBENCH_HOME``, else ``./.protobench``.

The snapshot store (``<home>/snapshots``), the runs' worker and target logs
(``<home>/logs/<id>/``) and crash logs (``<home>/logs``) live under one
directory. Unset (or empty), it is ``.protobench`` in the current directory, as
before; set it to keep every run in one place whatever the directory you are in.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "PROTOBENCH_HOME"
DEFAULT = Path(".protobench")


def home() -> Path:
    """The directory of the store and logs (read from the environment on each call)."""
    value = os.environ.get(ENV, "").strip()
    return Path(value).expanduser() if value else DEFAULT
