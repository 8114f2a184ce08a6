"""perf for native targets (mosquitto, nginx, a C or Rust server): the commands and their output.

One ``perf record -e cpu-clock -g`` runs over the whole window, on the
software clock (no hardware counters needed, as on most VMs), with frame
pointer call graphs and timestamps on ``CLOCK_MONOTONIC`` (the clock of
``time.monotonic``), switching to a new file every second
(``--switch-output=1s``): each finished file is one chunk, read with
``perf script`` while the recording goes on, so the live view needs no restart
and the chunks leave no gap. ``cpu-clock`` samples a thread only while it
runs, so every stack is a running one. Symbols come from the binaries'
symbol tables (Debian's ``-dbgsym`` packages add more); a frame perf cannot
name is shown as its library (``[libc.so.6]``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from protobench.engine.stacks.model import Frame, StackCounter, StackProfile, clean

INSTALL = "apt-get install linux-perf (Debian), linux-tools-common (Ubuntu) or perf (Fedora)"


def binary() -> str | None:
    return shutil.which("perf")


def paranoid() -> int | None:
    """``kernel.perf_event_paranoid`` (None when it cannot be read)."""
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        return None


def cannot_run() -> str | None:
    """Why perf cannot sample another process here, or None."""
    if binary() is None:
        return f"perf is not installed ({INSTALL})"
    level = paranoid()
    if os.geteuid() != 0 and level is not None and level > 1:
        return (
            f"perf may not sample other processes (kernel.perf_event_paranoid = {level}; "
            "run as root or set it to 1 or less)"
        )
    return None


def record_command(executable: str, pid: int, rate: float, output: Path) -> list[str]:
    """``perf record`` of ``pid`` into ``output``, a new file each second (stops on SIGINT)."""
    return [
        executable,
        "record",
        "-e",
        "cpu-clock",
        "-F",
        str(round(rate)),
        "-g",
        "-k",
        "CLOCK_MONOTONIC",
        "--switch-output=1s",
        "-q",
        "-p",
        str(pid),
        "-o",
        str(output),
    ]


def script_command(executable: str, data: Path) -> list[str]:
    """``perf script`` of one recorded file: each sample's time and stack."""
    return [executable, "script", "-i", str(data), "-F", "time,ip,sym,dso"]


def _frame(line: str) -> Frame | None:
    """One stack line (``ADDR SYMBOL (DSO)``), or None for an unknown frame of an unknown DSO."""
    _, _, rest = line.strip().partition(" ")
    symbol, sep, dso = rest.rpartition(" (")
    if not sep:
        symbol, dso = rest, ""
    dso = dso.removesuffix(")")
    library = "kernel" if dso == "[kernel.kallsyms]" else os.path.basename(dso)
    if library in ("", "[unknown]") and symbol in ("", "[unknown]"):
        return None
    name = symbol.partition("+0x")[0] if symbol and symbol != "[unknown]" else f"[{library}]"
    return Frame(name=clean(name), file=clean(library), module=clean(library))


def parse_script(text: str, start: float, end: float) -> StackProfile:
    """The stacks of ``perf script`` output whose time is in [start, end) (monotonic seconds)."""
    counter = StackCounter()
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or lines[0].startswith("\t"):
            continue
        try:
            when = float(lines[0].strip().rstrip(":").split()[-1].rstrip(":"))
        except (ValueError, IndexError):
            continue
        if not start <= when < end:
            continue
        frames = [f for f in (_frame(line) for line in lines[1:]) if f is not None]
        if frames:
            counter.add(reversed(frames), 1)
    return counter.profile()
