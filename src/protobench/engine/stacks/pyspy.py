"""py-spy for Python targets: the command of one recording, and its raw output read back.

One recording is ``py-spy record --pid PID --rate R --idle --function --format raw``
(``--native`` on request) stopped with SIGINT, which makes py-spy write what it
has. ``--idle`` keeps the waiting threads' stacks, so the profile shows where
a server waits as well as where it runs (:mod:`~protobench.engine.stacks.waits`
tells them apart); ``--function`` counts each function at its first line, so
a function is one frame however many lines of it were sampled. The raw
format is one ``frame;frame;... COUNT`` line per distinct stack, root first,
each frame ``function (file:line)`` (a native one ``function (library)``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from protobench.engine.stacks.model import Frame, StackCounter, StackProfile, clean
from protobench.engine.stacks.waits import is_wait

INSTALL = "pip install 'protobench[profile]'"


def binary() -> str | None:
    """The py-spy executable beside this Python (the ``profile`` extra) or on ``PATH``."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file():
        return str(beside)
    return shutil.which("py-spy")


def command(executable: str, pid: int, rate: float, output: Path, native: bool) -> list[str]:
    """The command of one recording of ``pid`` into ``output`` (it runs until SIGINT)."""
    args = [executable, "record", "--pid", str(pid), "--rate", str(round(rate))]
    args += ["--idle", "--function", "--format", "raw", "--output", str(output)]
    return [*args, "--native"] if native else args


def module_of(file: str) -> str:
    """The module of a frame's file: ``pkg/mod.py`` is ``pkg.mod``; a library stays as named."""
    if file.endswith(".py"):
        return file[:-3].replace("/", ".").removesuffix(".__init__")
    return file


def parse_frame(text: str) -> Frame:
    """One frame of py-spy's raw output: ``function (file:line)`` or ``function (library)``."""
    name, sep, where = text.rpartition(" (")
    if not sep or not where.endswith(")"):
        return Frame(name=clean(text))
    where = where[:-1]
    file, colon, line = where.rpartition(":")
    if not (colon and line.isdigit()):
        file, line = where, "0"
    file = clean(file)
    return Frame(name=clean(name), file=file, line=int(line), module=clean(module_of(file)))


def parse_raw(text: str) -> StackProfile:
    """The stacks of py-spy's raw output; a line that is not ``stack COUNT`` is skipped."""
    counter = StackCounter()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [parse_frame(part) for part in stack.split(";")]
        counter.add(frames, int(count), idle=is_wait(frames[-1]))
    return counter.profile()
