"""Plain-text rendering of reports and progress for the terminal (no Rich needed)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping
from typing import TextIO

from protobench.cli.profile_render import profile_lines
from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunStarted,
)
from protobench.engine.figures import rate_changes
from protobench.engine.report_model import (
    NO_SESSION,
    NO_SESSION_NOTICE,
    Report,
    Resources,
    ThresholdResult,
    Verdicts,
    describe_clock,
    describe_connections,
    describe_model,
)
from protobench.engine.summaries import LatencySummary, OpSummary
from protobench.termtext import visible, visible_tree
from protobench.vocab.thresholds import LATENCY_COLUMNS, observed
from protobench.vocab.units import format_duration


def us(value: float | None) -> str:
    return "-" if value is None else format_duration(value / 1e6)


def summary_table(report: Report, profile_top: int = 5) -> str:
    """The human summary of a report: one line per operation and a total, then the verdicts.

    Each op says what its latency measures; the total shows a latency only
    when every op measures the same thing. Figures that do not exist print as
    ``-`` (or ``absent`` in a sentence), never ``None``. A profiled target's
    ``profile_top`` functions follow the resources. Every string of the report
    (an error text, a notice, an op name, a function of the target) is shown as
    :func:`visible_tree` has it.
    """
    report = visible_tree(report)
    lines = [
        f"protobench {report.tool.version}  profile {report.profile}  "
        f"protocol {report.protocol}  target {report.target} ({report.target_kind})",
    ]
    if report.stop_reason == NO_SESSION:
        return "\n".join(lines + _no_session_lines(report))
    sustain = report.sustain
    verdicts = report.verdicts
    failing = {c.op for c in verdicts.checks if not c.ok and c.op}
    if sustain is None:
        lines.append("no sustain phase was measured")
    else:
        seconds = sustain.duration_s
        length = f"{seconds:.1f}s" if seconds >= 1 else format_duration(seconds)
        model = describe_model(report.model, rate_changes(report))
        clock = describe_clock(report.clock)
        lines.append(f"sustain {length}  {model}{'  ' + clock if clock else ''}")
        header = f"{'op':24} {'ok':>10} {'err':>7} {'err%':>7} {'ops/s':>11} "
        header += " ".join(f"{label:>8}" for _, label in LATENCY_COLUMNS)
        lines.append(header + "  latency")
        protocols = report.protocols or {}
        for name, op in [*sustain.ops.items(), ("TOTAL", sustain.total)]:
            lines.extend(_op_lines(name, op, name in failing, protocols.get(name)))
    lines.extend(_threshold_line(t, report.nothing_measured) for t in report.thresholds)
    lines.extend(_verdict_lines(verdicts, report.partial))
    lines.append(_resources_line(report.resources))
    if report.target_profile is not None:
        lines.extend(profile_lines(report.target_profile, profile_top))
    lines.extend(_tail(report))
    return "\n".join(lines)


def _tail(report: Report, but: str | None = None) -> list[str]:
    """The notices (but those of kind ``but``), whether the run is partial, where it is kept."""
    lines = [f"notice [{n.kind}]: {n.message}" for n in report.notices if n.kind != but]
    if report.partial:
        lines.append(f"PARTIAL RUN ({report.stop_reason})")
    if report.snapshot_error:
        lines.append(f"SNAPSHOT NOT IN THE STORE: {report.snapshot_error}")
    elif report.snapshot:
        lines.append(f"snapshot {report.snapshot}")
    return lines


def _no_session_lines(report: Report) -> list[str]:
    """A run stopped early because no session could open: why, in one line, instead of a
    table of errors; then its resources, its other notices and where it was kept."""
    why = [n.message for n in report.notices if n.kind == NO_SESSION_NOTICE]
    lines = [f"NOTHING MEASURED: {line}" for line in why[:1]]
    lines.append(_resources_line(report.resources))
    return lines + _tail(report, but=NO_SESSION_NOTICE)


def _verdict_lines(verdicts: Verdicts, partial: bool) -> list[str]:
    """The failed checks, then what stopped or limited the run, then the findings."""
    lines = [f"check FAIL: {c.expr} ({c.reason})" for c in verdicts.checks if not c.ok]
    if verdicts.incomplete_reason and not partial:
        lines.append(f"NOTHING MEASURED: {verdicts.incomplete_reason}")
    if verdicts.generator_bound:
        lines.append(f"GENERATOR-BOUND: {verdicts.reason}")
    if verdicts.host_saturated:
        lines.append(f"HOST-SATURATED: {verdicts.host_reason}")
    lines.extend(f"finding: {finding}" for finding in verdicts.findings)
    return lines


def _latency_cells(latency: LatencySummary) -> str:
    return " ".join(f"{us(latency.value(k)):>8}" for k, _ in LATENCY_COLUMNS)


def _op_lines(
    name: str, op: OpSummary, failing: bool, protocols: Mapping[str, int] | None = None
) -> list[str]:
    label = f"{name[:22]} !" if failing else name[:24]
    lines = [
        f"{label:24} {op.ok:>10} {op.errors:>7} {op.error_rate:>7.2%} "
        f"{op.throughput:>11,.1f} {_latency_cells(op.latency_us)}  {op.latency_kind}"
    ]
    if protocols or op.streams_per_connection is not None:
        lines.append(
            f"{'':24}   {describe_connections(protocols or {}, op.streams_per_connection)}"
        )
    for kind, figures in (op.latency_by_kind or {}).items():
        cells = _latency_cells(figures)
        lines.append(f"{'':24} {'':>10} {'':>7} {'':>7} {'':>11} {cells}  {kind}")
    delay = op.generator_delay_us
    if delay is not None and delay.count:
        lines.append(
            f"{'':24}   generator delay: p50 {us(delay.p50)}, p99 {us(delay.p99)}"
            " (replies waiting for the generator; not in the latency)"
        )
    if op.down_s:
        failed = op.counters.get("connect_failed", 0)
        lines.append(
            f"{'':24}   down: {op.down_s:g} session-s ({op.down_share:.2%} of sustain), "
            f"{failed} failed connects"
        )
    if op.errors_by_class:
        classes = ", ".join(f"{k}={v}" for k, v in op.errors_by_class.items())
        lines.append(f"{'':24}   errors: {classes}")
    if op.counters:
        counters = ", ".join(f"{k}={v}" for k, v in op.counters.items())
        lines.append(f"{'':24}   counters: {counters}")
    return lines


def _threshold_line(threshold: ThresholdResult, nothing_measured: bool) -> str:
    if nothing_measured:
        return f"threshold NOT EVALUATED: {threshold.expr} (nothing measured)"
    mark = "PASS" if threshold.ok else "FAIL"
    value = observed(threshold.expr, threshold.value)
    return f"threshold {mark}: {threshold.expr} (observed {value})"


def _resources_line(resources: Resources) -> str:
    gen, target, host = resources.generator, resources.target, resources.host
    line = f"generator cpu peak {_pct(gen.worker_cpu_peak)} rss {_mib(gen.rss_peak)}"
    if target is not None:
        line += f"  target cpu peak {_pct(target.cpu_peak)} rss {_mib(target.rss_peak)}"
        if target.rss_per_connection is not None:
            line += f" ({target.rss_per_connection / 1024:.1f} KiB/connection)"
        elif target.rss_per_session is not None:
            line += f" ({target.rss_per_session / 1024:.1f} KiB/session)"
    if host.cpu_mean is not None:
        line += f"  host cpu mean {_pct(host.cpu_mean)} (ours {_pct(host.workers_share_mean)})"
    return line


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}MiB"


class Progress:
    """A one-line progress display on stderr (rewritten in place on a terminal)."""

    def __init__(
        self,
        plan_duration: float,
        plan_warmup: float,
        stream: TextIO = sys.stderr,
        requests: int | None = None,
    ):
        self.stream = stream
        self.tty = stream.isatty()
        self.total = plan_warmup + plan_duration
        self.requests = requests
        """The request count that ends the sustain: the progress counts exchanges, not seconds."""
        self.last_print = 0.0
        self.cpu = ""

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._line(
                f"started: {event.workers} workers, {event.sessions_opened} sessions "
                f"({event.sessions_failed} failed) against {event.target} ({event.target_kind})",
                final=True,
            )
        elif isinstance(event, PhaseChanged) and not self.tty:
            self._line(f"phase {event.phase} at {event.elapsed:.1f}s", final=True)
        elif isinstance(event, ResourceSample):
            cpus = [w["cpu"] for w in event.workers]
            self.cpu = f" gen cpu {max(cpus, default=0):.0f}%"
        elif isinstance(event, IntervalUpdate) and event.phase != "drain":
            total = event.total
            lat = total.latency_us
            so_far = f"{event.elapsed:5.1f}/{self.total:.0f}s"
            if self.requests is not None:
                ended = 0
                if event.phase == "sustain" and event.phase_summary is not None:
                    ended = event.phase_summary.total.ok + event.phase_summary.total.errors
                so_far = f"{event.elapsed:5.1f}s {ended:,}/{self.requests:,}"
            text = (
                f"[{event.phase} {so_far}] "
                f"{total.throughput:>10,.0f} ok/s  p50 {us(lat.p50)} "
                f"p99 {us(lat.p99)}  err {total.error_rate:.2%}{self.cpu}"
            )
            now = time.monotonic()
            if self.tty or now - self.last_print >= 5.0:
                self.last_print = now
                self._line(text)
        elif isinstance(event, Notice):
            self._line(f"{event.kind}: {event.message}", final=True)

    def _line(self, text: str, final: bool = False) -> None:
        text = visible(text)  # a target's or a notice's words: never a terminal command
        with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) must not stop the run
            if self.tty:
                self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            with contextlib.suppress(OSError):
                self.stream.write("\n")
                self.stream.flush()
