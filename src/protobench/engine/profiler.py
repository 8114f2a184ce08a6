"""The target's profile over the sustain phase, recorded in chunks, one live update per chunk.

:class:`TargetProfiler` runs the chosen tool (:mod:`~protobench.engine.stacks.choose`)
from the start of sustain to its end (or the run's early stop):

- **py-spy**: one recording per chunk of :data:`CHUNK` seconds, each stopped
  with SIGINT (py-spy then writes its stacks); the next starts at once.
- **perf**: one recording over the whole window, started :data:`PERF_LEAD`
  seconds early (perf takes a while to start) and cut into one-second files;
  only the samples whose time falls in sustain count.
- **pprof**: one CPU profile of the Go target per chunk
  (``/debug/pprof/profile?seconds=N``), then the ``heap``/``mutex`` profiles asked for.

Each chunk's stacks join the run's profile and its top functions are
published as a :class:`~protobench.engine.events.ProfileUpdate` (the monitor's
live view). A tool that fails is one notice (``profile``) with its last words,
and the run goes on without a profile (or with the chunks it had). Every
process it starts dies with the run (``lifeline.preexec``) and is stopped
when the window ends. Parsing runs in a worker thread, off the run's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from protobench.engine.events import ProfileUpdate
from protobench.engine.plan import TargetProfiling
from protobench.engine.stacks import perf, pprof, pyspy
from protobench.engine.stacks.choose import Choice, choose
from protobench.engine.stacks.model import (
    StackCounter,
    StackProfile,
    TargetProfile,
    function_shares,
)
from protobench.lifeline import preexec
from protobench.vocab.exceptions import Incomplete

CHUNK = 2.0
"""Seconds per py-spy or pprof recording (the live view's update period)."""
PERF_LEAD = 3.0
"""Seconds before sustain that perf starts (its start takes 1-2 s on a busy VM)."""
STOP_GRACE = 10.0
"""Seconds a tool has to write its output after SIGINT before it is killed."""
LIVE_TOP = 10
"""Functions in each live update."""

Emit = Callable[[ProfileUpdate], None]
Say = Callable[[str], None]
Clock = Callable[[], float]


class ProfilerFailed(Incomplete):
    """The tool could not record: one line (its own last words) for the notice."""


class TargetProfiler:
    """Records ``choice``'s profile of the target between two monotonic times.

    ``workdir`` holds the tool's output files and its log (``profiler.log``);
    ``emit`` publishes live updates; ``say`` makes a notice; ``elapsed`` gives
    the run's elapsed seconds (for the updates and the profile's window).
    """

    def __init__(
        self,
        settings: TargetProfiling,
        choice: Choice,
        workdir: Path,
        emit: Emit,
        say: Say,
        elapsed: Clock,
    ) -> None:
        self.settings = settings
        self.choice = choice
        self.workdir = workdir
        self.log = workdir / "profiler.log"
        self.emit = emit
        self.say = say
        self.elapsed = elapsed
        self.counter = StackCounter()
        self.extra: dict[str, StackProfile] = {}
        self.rate = 100.0 if choice.tool == "pprof" else settings.rate
        self.chunks = 0
        self.errors = 0
        self.window: tuple[float, float] | None = None
        self._quit = anyio.Event()
        self.done = anyio.Event()
        """Set when :meth:`run` has returned (its last chunk read)."""

    def quit(self) -> None:
        """End the recording now (the run stops early, or is over): the chunk under way is
        still stopped and read."""
        self._quit.set()

    def result(self) -> TargetProfile | None:
        """The run's profile (None: no chunk was recorded)."""
        if not self.chunks or self.window is None:
            return None
        return TargetProfile(
            tool=self.choice.tool,
            pid=self.choice.pid,
            rate=self.rate,
            native=self.settings.native and self.choice.tool == "py-spy",
            start_s=round(self.window[0], 3),
            end_s=round(self.window[1], 3),
            chunks=self.chunks,
            errors=self.errors,
            cpu=self.counter.profile(),
            extra=self.extra,
        )

    async def run(self, start: float, end: float) -> None:
        """Record from ``start`` to ``end`` (``time.monotonic``), or until :meth:`quit`."""
        try:
            await self._record(start, end)
        finally:
            self.done.set()

    async def _record(self, start: float, end: float) -> None:
        stop = self._quit
        lead = PERF_LEAD if self.choice.tool == "perf" else 0.0
        with anyio.move_on_after(max(0.0, start - lead - time.monotonic())):
            await stop.wait()
        if stop.is_set():
            return
        began = self.elapsed() + lead
        try:
            if self.choice.tool == "py-spy":
                await self._pyspy(end, stop)
            elif self.choice.tool == "perf":
                await self._perf(start, end, stop)
            else:
                await self._pprof(end, stop)
        except ProfilerFailed as exc:
            self.say(f"cannot profile the target with {self.choice.tool}: {exc}")
        finally:
            self.window = (began, self.elapsed())

    def _chunk(self, profile: StackProfile, seconds: float) -> None:
        self.chunks += 1
        self.counter.add_profile(profile)
        shares = function_shares(profile)[:LIVE_TOP]
        self.emit(
            ProfileUpdate(
                elapsed=round(self.elapsed(), 3),
                tool=self.choice.tool,
                seconds=round(seconds, 3),
                samples=profile.samples,
                running=profile.running,
                top=shares,
            )
        )

    async def _spawn(self, args: list[str]) -> asyncio.subprocess.Process:
        with self.log.open("ab") as log:
            return await asyncio.create_subprocess_exec(
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=preexec(),
            )

    def _last_words(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "no output"
        words = [ln.strip() for ln in lines if ln.strip() and "Stack backtrace" not in ln]
        errors = [ln for ln in words if "rror" in ln or "ermission" in ln]
        return " ".join((errors or words or ["no output"])[-1].split())[:300]

    async def _interrupt(self, process: asyncio.subprocess.Process) -> int:
        """SIGINT (the tool writes its output), then SIGKILL after :data:`STOP_GRACE`."""
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(STOP_GRACE):
                return await process.wait()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            code: int = await process.wait()
        return code

    async def _pyspy(self, end: float, stop: anyio.Event) -> None:
        assert self.choice.executable is not None
        assert self.choice.pid is not None
        index = 0
        while not stop.is_set() and (now := time.monotonic()) < end - 0.2:
            output = self.workdir / f"py-spy-{index}.txt"
            args = pyspy.command(
                self.choice.executable, self.choice.pid, self.rate, output, self.settings.native
            )
            began = time.monotonic()
            process = await self._spawn(args)
            try:
                with anyio.move_on_after(min(CHUNK, end - now)):
                    await stop.wait()
            finally:
                code = await self._interrupt(process)
            text = output.read_text(errors="replace") if output.exists() else ""
            if not text:
                if self.chunks == 0 or code not in (0, -signal.SIGINT):
                    raise ProfilerFailed(self._last_words())
                self.errors += 1
            else:
                profile = await anyio.to_thread.run_sync(pyspy.parse_raw, text)
                self._chunk(profile, time.monotonic() - began)
            output.unlink(missing_ok=True)
            index += 1

    async def _perf(self, start: float, end: float, stop: anyio.Event) -> None:
        assert self.choice.executable is not None
        assert self.choice.pid is not None
        executable = self.choice.executable
        output = self.workdir / "perf.data"
        process = await self._spawn(
            perf.record_command(executable, self.choice.pid, self.rate, output)
        )
        done: set[Path] = set()

        async def read(finished: list[Path]) -> None:
            for data in finished:
                done.add(data)
                result = await anyio.run_process(perf.script_command(executable, data), check=False)
                data.unlink(missing_ok=True)
                text = result.stdout.decode(errors="replace")
                profile = await anyio.to_thread.run_sync(perf.parse_script, text, start, end)
                if result.returncode != 0:
                    self.errors += 1
                elif profile.samples or self.chunks:
                    self._chunk(profile, 1.0)

        try:
            while not stop.is_set() and time.monotonic() < end and process.returncode is None:
                with anyio.move_on_after(0.5):
                    await stop.wait()
                files = sorted(p for p in self.workdir.glob("perf.data.*") if p not in done)
                await read(files[:-1])  # the newest may still be written
        finally:
            code = await self._interrupt(process)
        await read(sorted(p for p in self.workdir.glob("perf.data.*") if p not in done))
        if not self.chunks:
            if code not in (0, -signal.SIGINT, 130):
                raise ProfilerFailed(self._last_words())
            raise ProfilerFailed("perf recorded no sample of the target in sustain (no CPU used?)")

    async def _pprof(self, end: float, stop: anyio.Event) -> None:
        url = self.settings.pprof
        assert url is not None
        while not stop.is_set() and (now := time.monotonic()) < end - 0.5:
            seconds = max(1, min(math.ceil(CHUNK), round(end - now)))
            where = pprof.profile_url(url, "cpu", seconds)
            began = time.monotonic()
            try:
                with anyio.move_on_after(seconds + STOP_GRACE) as scope:
                    body = await anyio.to_thread.run_sync(
                        pprof.fetch, where, seconds + STOP_GRACE, abandon_on_cancel=True
                    )
                    decoded = await anyio.to_thread.run_sync(pprof.decode, body)
                if scope.cancelled_caught:
                    raise pprof.PprofError(f"{where}: no answer in {seconds + STOP_GRACE:g} s")
            except pprof.PprofError as exc:
                if self.chunks == 0:
                    raise ProfilerFailed(str(exc)) from None
                self.errors += 1
                continue
            if decoded.period:
                self.rate = round(1e9 / decoded.period, 1)
            self._chunk(decoded.profile, time.monotonic() - began)
        for kind in self.settings.pprof_extra:
            try:
                body = await anyio.to_thread.run_sync(
                    pprof.fetch, pprof.profile_url(url, kind, 0), STOP_GRACE, abandon_on_cancel=True
                )
                self.extra[kind] = (await anyio.to_thread.run_sync(pprof.decode, body)).profile
            except pprof.PprofError as exc:
                self.say(f"cannot fetch the target's {kind} profile: {exc}")


def start_profiler(
    settings: TargetProfiling | None,
    pid: int | None,
    workdir: Path,
    emit: Emit,
    say: Say,
    elapsed: Clock,
) -> TargetProfiler | None:
    """The run's profiler when ``settings`` ask for one and the target can be sampled; else
    None, with one notice saying why not (the run goes on)."""
    if settings is None:
        return None
    choice = choose(settings.tool, pid, settings.pprof)
    if isinstance(choice, str):
        say(f"cannot profile the target: {choice}")
        return None
    return TargetProfiler(settings, choice, workdir, emit, say, elapsed)
