"""The typed profile of a target process: sampled stacks with counts, and what they add up to.

A :class:`StackProfile` is a table of :class:`Frame` (function, file or
library, first line, module) and of :class:`Stack` (frame indices, root
first, with a sample count and whether the sampled thread was waiting, not
running). :class:`TargetProfile` is one run's: the tool that sampled it, its
rate, the sustain window it covers, the CPU profile and, for a Go target,
heap or mutex profiles. A snapshot keeps it whole (``target_profile``); the
report keeps a :class:`ProfileSummary` of it (the top functions by self and
total share of the running samples, and the modules), made by
:func:`summarize`. Every name comes from the target: it is cut to a bounded
length when it is read (:func:`clean`) and kept as it is otherwise; what shows it
on a terminal passes it through ``termtext`` (control characters as escapes),
the HTML report escapes it.

A profile's memory is bounded however long the run: at most
:data:`MAX_STACKS` distinct stacks of at most :data:`MAX_DEPTH` frames
(:class:`StackCounter`); beyond that the smallest stacks are merged into one
``[other stacks]`` frame, their samples still counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from protobench.engine.summaries import OMIT_NONE

MAX_STACKS = 20_000
"""The most distinct stacks a profile keeps (the smallest are merged past that)."""
MAX_DEPTH = 256
"""The most frames of one stack (the deepest are dropped: the root side is kept)."""
MAX_NAME = 300
"""The most characters of a function, file or module name (a target's names are its own)."""
TOP = 15
"""Functions in a report's summary (and ``snapshots show``)."""
OTHER = "[other stacks]"
"""The frame that stands for the stacks merged away."""


def clean(text: str, limit: int = MAX_NAME) -> str:
    """``text`` from a target's stack cut at ``limit`` characters (the end marked ``…``)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One function: its name, its file (or library), its first line, the module it is in."""

    name: str
    file: str = ""
    line: int = 0
    module: str = ""

    @property
    def label(self) -> str:
        """``name (file:line)``, as a flame graph and a table show it."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.name} ({where})" if where else self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Stack:
    """A sampled stack (frame indices, root first), how often it was seen, and whether the
    thread was waiting (``idle``) rather than running."""

    frames: list[int]
    count: int
    idle: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StackProfile:
    """Stacks with counts over a table of frames; ``unit`` says what a count is."""

    unit: str = "samples"
    frames: list[Frame] = field(default_factory=list)
    stacks: list[Stack] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(s.count for s in self.stacks)

    @property
    def running(self) -> int:
        return sum(s.count for s in self.stacks if not s.idle)

    def labelled(self) -> Iterable[tuple[tuple[Frame, ...], int, bool]]:
        """Each stack as its frames (root first), count and idle flag."""
        frames = self.frames
        for stack in self.stacks:
            yield tuple(frames[i] for i in stack.frames), stack.count, stack.idle


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetProfile:
    """Where the target process spent the sustain phase, as one tool sampled it.

    ``tool`` is ``py-spy``, ``perf`` or ``pprof``; ``rate`` samples per second;
    ``start_s``/``end_s`` the window sampled (seconds into the run); ``chunks``
    the recordings it was made of (one per live update); ``cpu`` the stacks;
    ``extra`` a Go target's ``heap`` or ``mutex`` profile when asked for.
    """

    tool: str
    pid: int | None = None
    rate: float = 0.0
    native: bool = False
    start_s: float = 0.0
    end_s: float = 0.0
    chunks: int = 0
    errors: int = 0
    cpu: StackProfile = field(default_factory=StackProfile)
    extra: dict[str, StackProfile] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``py-spy at 100 Hz`` (what sampled it, and how often)."""
        return f"{self.tool} at {self.rate:g} Hz" + (" with native frames" if self.native else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionShare:
    """A function's share of the running samples: itself (``self``) and with its callees."""

    function: str
    file: str = ""
    module: str = ""
    self_samples: int = 0
    total_samples: int = 0
    self_share: float = 0.0
    total_share: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModuleShare:
    """A module's (file's, library's) share of the running samples, its functions' self time."""

    module: str
    samples: int = 0
    share: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileSummary:
    """The report's ``target_profile``: how the target was sampled and its top functions.

    Shares are of the running samples (``idle_share`` is the waiting ones' share
    of all samples); ``overhead`` is what sampling at this rate was measured to
    cost a target (README, Server insight), so a reader knows how much the
    figures beside it were perturbed.
    """

    tool: str
    pid: int | None = None
    rate: float = 0.0
    native: bool = False
    start_s: float = 0.0
    end_s: float = 0.0
    samples: int = 0
    running_samples: int = 0
    idle_share: float = 0.0
    overhead: str = ""
    top: list[FunctionShare] = field(default_factory=list)
    modules: list[ModuleShare] = field(default_factory=list)
    extra: list[str] | None = field(default=None, metadata=OMIT_NONE)


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def function_shares(profile: StackProfile) -> list[FunctionShare]:
    """Every function's self and total share of the running samples, largest self first.

    A function's total counts a sample once even when it is on the stack twice
    (recursion).
    """
    own: dict[int, int] = {}
    total: dict[int, int] = {}
    for stack in profile.stacks:
        if stack.idle or not stack.frames:
            continue
        leaf = stack.frames[-1]
        own[leaf] = own.get(leaf, 0) + stack.count
        for index in set(stack.frames):
            total[index] = total.get(index, 0) + stack.count
    running = profile.running
    keyed: dict[tuple[str, str], FunctionShare] = {}
    for index, count in total.items():
        frame = profile.frames[index]
        key = (frame.name, frame.file)
        before = keyed.get(key)
        self_samples = own.get(index, 0) + (before.self_samples if before else 0)
        total_samples = count + (before.total_samples if before else 0)
        keyed[key] = FunctionShare(
            function=frame.name,
            file=frame.file,
            module=frame.module,
            self_samples=self_samples,
            total_samples=min(total_samples, running),
            self_share=_share(self_samples, running),
            total_share=_share(min(total_samples, running), running),
        )
    return sorted(keyed.values(), key=lambda f: (-f.self_samples, -f.total_samples, f.function))


def module_shares(profile: StackProfile) -> list[ModuleShare]:
    """Each module's self samples (its functions' own time) and share, largest first."""
    counts: dict[str, int] = {}
    for stack in profile.stacks:
        if stack.idle or not stack.frames:
            continue
        module = profile.frames[stack.frames[-1]].module or "?"
        counts[module] = counts.get(module, 0) + stack.count
    running = profile.running
    return sorted(
        (ModuleShare(module=m, samples=n, share=_share(n, running)) for m, n in counts.items()),
        key=lambda m: (-m.samples, m.module),
    )


def summarize(profile: TargetProfile, overhead: str = "", top: int = TOP) -> ProfileSummary:
    """The report's summary of ``profile``: the ``top`` functions and the first modules."""
    samples, running = profile.cpu.samples, profile.cpu.running
    return ProfileSummary(
        tool=profile.tool,
        pid=profile.pid,
        rate=profile.rate,
        native=profile.native,
        start_s=profile.start_s,
        end_s=profile.end_s,
        samples=samples,
        running_samples=running,
        idle_share=_share(samples - running, samples),
        overhead=overhead,
        top=function_shares(profile.cpu)[:top],
        modules=module_shares(profile.cpu)[:top],
        extra=sorted(profile.extra) or None,
    )


class StackCounter:
    """Stacks added one by one (or a profile at a time) into a bounded :class:`StackProfile`."""

    def __init__(self, unit: str = "samples", limit: int = MAX_STACKS) -> None:
        self.unit = unit
        self.limit = limit
        self._frames: dict[Frame, int] = {}
        self._stacks: dict[tuple[tuple[int, ...], bool], int] = {}

    def _frame(self, frame: Frame) -> int:
        index = self._frames.get(frame)
        if index is None:
            index = self._frames[frame] = len(self._frames)
        return index

    def add(self, frames: Iterable[Frame], count: int, idle: bool = False) -> None:
        """Count ``count`` samples of the stack ``frames`` (root first)."""
        if count <= 0:
            return
        key = (tuple(self._frame(f) for f in list(frames)[:MAX_DEPTH]), idle)
        self._stacks[key] = self._stacks.get(key, 0) + count
        if len(self._stacks) > self.limit * 2:
            self._trim()

    def add_profile(self, profile: StackProfile) -> None:
        for frames, count, idle in profile.labelled():
            self.add(frames, count, idle)

    def _trim(self) -> None:
        """Keep the ``limit`` largest stacks; the others become one ``[other stacks]``."""
        ranked = sorted(self._stacks.items(), key=lambda item: -item[1])
        kept = dict(ranked[: self.limit - 2])
        other = self._frame(Frame(name=OTHER))
        for (_, idle), count in ranked[self.limit - 2 :]:
            key = ((other,), idle)
            kept[key] = kept.get(key, 0) + count
        self._stacks = kept

    def profile(self) -> StackProfile:
        """The stacks so far (at most ``limit``), largest first, with the frames they use."""
        if len(self._stacks) > self.limit:
            self._trim()
        used = sorted({i for frames, _ in self._stacks for i in frames})
        renumber = {old: new for new, old in enumerate(used)}
        table = list(self._frames)
        return StackProfile(
            unit=self.unit,
            frames=[table[i] for i in used],
            stacks=[
                Stack(frames=[renumber[i] for i in frames], count=count, idle=idle)
                for (frames, idle), count in sorted(self._stacks.items(), key=lambda s: -s[1])
            ],
        )


def merged(profiles: Iterable[StackProfile], unit: str = "samples") -> StackProfile:
    """One profile of several (chunks of a run, runs of one side of a diff)."""
    counter = StackCounter(unit)
    for profile in profiles:
        counter.add_profile(profile)
    return counter.profile()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareChange:
    """A function's share of the running samples in two profiles (0 where it is absent),
    in percentage points of change."""

    function: str
    file: str = ""
    module: str = ""
    base_self: float = 0.0
    new_self: float = 0.0
    self_change: float = 0.0
    base_total: float = 0.0
    new_total: float = 0.0
    total_change: float = 0.0


def share_changes(base: StackProfile, new: StackProfile) -> list[ShareChange]:
    """Every function of either profile with its shares on each side, the largest change in
    self share first (then in total share)."""
    before = {(f.function, f.file): f for f in function_shares(base)}
    after = {(f.function, f.file): f for f in function_shares(new)}
    changes = []
    for key in set(before) | set(after):
        old, now = before.get(key), after.get(key)
        either = now or old
        assert either is not None
        base_self, new_self = (old.self_share if old else 0.0), (now.self_share if now else 0.0)
        base_total = old.total_share if old else 0.0
        new_total = now.total_share if now else 0.0
        changes.append(
            ShareChange(
                function=key[0],
                file=key[1],
                module=either.module,
                base_self=base_self,
                new_self=new_self,
                self_change=round(new_self - base_self, 4),
                base_total=base_total,
                new_total=new_total,
                total_change=round(new_total - base_total, 4),
            )
        )
    return sorted(changes, key=lambda c: (-abs(c.self_change), -abs(c.total_change), c.function))
