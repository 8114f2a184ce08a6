"""pprof profiles (``profile.proto``): a Go target's, read back, and ours, written out.

A Go server that imports ``net/http/pprof`` serves ``/debug/pprof/profile?seconds=N``
(its CPU for the next N seconds, sampled at 100 Hz) and ``heap`` and ``mutex``
(since it started). :func:`fetch` gets one (gzip, at most :data:`MAX_BYTES`),
:func:`decode` reads it into a :class:`StackProfile` (the ``samples`` value
when the profile has one, else its default or last sample type: bytes in use
for a heap profile, nanoseconds of delay for a mutex one). :func:`encode`
writes a profile of ours as pprof (``snapshots export --format pprof``), which
``go tool pprof`` reads: one location per frame, a ``state`` label
(``running`` or ``idle``) on each sample.
"""

from __future__ import annotations

import gzip
import urllib.request
import zlib
from dataclasses import dataclass

from protobench.engine.stacks.model import Frame, StackCounter, StackProfile, clean
from protobench.engine.stacks.protowire import BYTES, WireError, Writer, fields, signed, varints
from protobench.vocab.exceptions import Incomplete

MAX_BYTES = 64 * 1024 * 1024
"""The most bytes of a fetched profile, compressed or not."""
KINDS = ("heap", "mutex")
"""The profiles besides the CPU's that ``pprof_extra`` may ask for."""


class PprofError(Incomplete, ValueError):
    """A profile that could not be fetched or read: one line saying why."""


@dataclass(frozen=True)
class Decoded:
    """A decoded profile and its sampling period (nanoseconds per CPU sample, 0 if none)."""

    profile: StackProfile
    period: int


def profile_url(base: str, kind: str, seconds: int) -> str:
    """The URL of the ``kind`` profile (``cpu``, ``heap``, ``mutex``) under ``base``."""
    root = base.rstrip("/")
    if kind == "cpu":
        return f"{root}/profile?seconds={seconds}"
    return f"{root}/{kind}"


def fetch(url: str, timeout: float) -> bytes:
    """The body of ``url`` (blocking: run it in a thread); :class:`PprofError` on failure."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            body: bytes = reply.read(MAX_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise PprofError(f"cannot fetch {url}: {exc}") from None
    if len(body) > MAX_BYTES:
        raise PprofError(f"{url}: a profile larger than {MAX_BYTES // 2**20} MiB")
    return body


def _inflate(data: bytes) -> bytes:
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        out = zlib.decompressobj(wbits=31)
        raw = out.decompress(data, MAX_BYTES + 1)
    except zlib.error as exc:
        raise PprofError(f"not a gzip stream ({exc})") from None
    if len(raw) > MAX_BYTES:
        raise PprofError(f"a profile larger than {MAX_BYTES // 2**20} MiB uncompressed")
    return raw


def _message(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise WireError("expected a message")
    return value


def _go_package(name: str) -> str:
    """``github.com/a/b.(*T).M`` → ``github.com/a/b``; ``main.f`` → ``main``."""
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    return name[:dot] if dot > 0 else name


def decode(data: bytes) -> Decoded:
    """A pprof profile (gzip or not) as a :class:`StackProfile`; :class:`PprofError` if bad."""
    try:
        return _decode(_inflate(data))
    except (WireError, IndexError, KeyError) as exc:
        raise PprofError(f"not a pprof profile ({exc})") from None


def _decode(raw: bytes) -> Decoded:
    strings: list[str] = []
    types: list[tuple[int, int]] = []
    samples: list[tuple[list[int], list[int]]] = []
    functions: dict[int, tuple[int, int, int]] = {}
    locations: dict[int, list[tuple[int, int]]] = {}
    default_type = period = 0
    for number, kind, value in fields(raw):
        if number == 6 and kind == BYTES:
            strings.append(_message(value).decode("utf-8", "replace"))
        elif number == 1:
            parts = {n: v for n, _, v in fields(_message(value))}
            types.append((int(parts.get(1, 0)), int(parts.get(2, 0))))
        elif number == 2:
            ids: list[int] = []
            values: list[int] = []
            for n, _, v in fields(_message(value)):
                if n == 1:
                    ids += varints(v)
                elif n == 2:
                    values += [signed(x) for x in varints(v)]
            samples.append((ids, values))
        elif number == 4:
            location_id, lines = 0, []
            for n, _, v in fields(_message(value)):
                if n == 1:
                    location_id = int(v) if isinstance(v, int) else 0
                elif n == 4:
                    line = {ln: lv for ln, _, lv in fields(_message(v))}
                    lines.append((int(line.get(1, 0)), signed(int(line.get(2, 0)))))
            locations[location_id] = lines
        elif number == 5:
            parts = {n: v for n, _, v in fields(_message(value))}
            functions[int(parts.get(1, 0))] = (
                int(parts.get(2, 0)),
                int(parts.get(4, 0)),
                signed(int(parts.get(5, 0))),
            )
        elif number == 12 and isinstance(value, int):
            period = signed(value)
        elif number == 14 and isinstance(value, int):
            default_type = value
    names = [strings[t] for t, _ in types]
    if "samples" in names:
        index = names.index("samples")
    elif default_type and strings[default_type] in names:
        index = names.index(strings[default_type])
    else:
        index = len(types) - 1
    unit = (
        "samples"
        if names and names[index] == "samples"
        else strings[types[index][1]]
        if types
        else "samples"
    )

    def frame(function_id: int, line: int) -> Frame:
        name_at, file_at, start = functions.get(function_id, (0, 0, 0))
        name = clean(strings[name_at] or "?")
        return Frame(
            name=name, file=clean(strings[file_at]), line=start or line, module=_go_package(name)
        )

    counter = StackCounter(unit)
    for ids, values in samples:
        if index >= len(values):
            continue
        stack = [frame(f, ln) for loc in ids for f, ln in locations.get(loc, [])]
        counter.add(reversed(stack), values[index])
    return Decoded(counter.profile(), period)


def encode(profile: StackProfile, rate: float) -> bytes:
    """``profile`` as a gzip pprof profile (sample counts and CPU time at ``rate``)."""
    strings: dict[str, int] = {"": 0}

    def text(value: str) -> int:
        return strings.setdefault(value, len(strings))

    period = round(1e9 / rate) if rate > 0 else 0
    out = Writer()
    for name, unit in (("samples", "count"), ("cpu", "nanoseconds")):
        out.bytes_(1, Writer().varint(1, text(name)).varint(2, text(unit)).bytes())
    state, running, idle = text("state"), text("running"), text("idle")
    for stack in profile.stacks:
        sample = Writer().packed(1, [i + 1 for i in reversed(stack.frames)])
        sample.packed(2, [stack.count, stack.count * period])
        sample.bytes_(
            3, Writer().varint(1, state).varint(2, idle if stack.idle else running).bytes()
        )
        out.bytes_(2, sample.bytes())
    for index, frame in enumerate(profile.frames, start=1):
        line = Writer().varint(1, index).varint(2, frame.line).bytes()
        out.bytes_(4, Writer().varint(1, index).bytes_(4, line).bytes())
    for index, frame in enumerate(profile.frames, start=1):
        function = Writer().varint(1, index).varint(2, text(frame.name))
        function.varint(3, text(frame.name)).varint(4, text(frame.file)).varint(5, frame.line)
        out.bytes_(5, function.bytes())
    for value in strings:
        out.bytes_(6, value.encode())
    out.bytes_(11, Writer().varint(1, text("cpu")).varint(2, text("nanoseconds")).bytes())
    out.varint(12, period)
    return gzip.compress(out.bytes(), mtime=0)
