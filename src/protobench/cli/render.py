"""Plain-text rendering of reports and progress for the terminal (no Rich needed)."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, TextIO

from protobench.engine.events import (
    Event,
    IntervalUpdate,
    Notice,
    PhaseChanged,
    ResourceSample,
    RunStarted,
)
from protobench.engine.thresholds import LATENCY_COLUMNS, observed
from protobench.profiles.units import format_duration


def us(value: float | None) -> str:
    return "-" if value is None else format_duration(value / 1e6)


def describe_model(model: dict[str, Any]) -> str:
    """``closed model, 50 sessions`` or ``open model, 2000/s -> 5000/s over 40 sessions``."""
    if model["type"] == "closed":
        return f"closed model, {model['sessions']} sessions"
    rate = f"{model['rate']:g}/s"
    if "ramp_to" in model:
        rate += f" -> {model['ramp_to']:g}/s"
    return f"open model, {rate} over {model['sessions']} sessions"


def summary_table(report: dict[str, Any]) -> str:
    """The human summary of a report: one line per operation and a total, then the verdicts.

    Each op says what its latency measures; the total shows a latency only
    when every op measures the same thing. Figures that do not exist print as
    ``-`` (or ``absent`` in a sentence), never ``None``.
    """
    lines = [
        f"protobench {report['tool']['version']}  profile {report['profile']}  "
        f"protocol {report['protocol']}  target {report['target']} ({report['target_kind']})",
    ]
    sustain = report["phases"].get("sustain")
    verdicts = report["verdicts"]
    failing = {c["op"] for c in verdicts.get("checks", []) if not c["ok"] and c.get("op")}
    if sustain is None:
        lines.append("no sustain phase was measured")
    else:
        lines.append(f"sustain {sustain['duration_s']:.1f}s  {describe_model(report['model'])}")
        header = f"{'op':24} {'ok':>10} {'err':>7} {'err%':>7} {'ops/s':>11} "
        header += " ".join(f"{label:>8}" for _, label in LATENCY_COLUMNS)
        lines.append(header + "  latency")
        rows = [*sustain["ops"].items(), ("TOTAL", sustain["total"])]
        for name, op in rows:
            lines.extend(_op_lines(name, op, name in failing))
    for threshold in report["thresholds"]:
        lines.append(_threshold_line(threshold))
    for check in verdicts.get("checks", []):
        if not check["ok"]:
            lines.append(f"check FAIL: {check['expr']} ({check.get('reason')})")
    if verdicts.get("incomplete_reason") and not report["partial"]:
        lines.append(f"NOTHING MEASURED: {verdicts['incomplete_reason']}")
    if verdicts["generator_bound"]:
        lines.append(f"GENERATOR-BOUND: {verdicts['reason']}")
    if verdicts.get("host_saturated"):
        lines.append(f"HOST-SATURATED: {verdicts['host_reason']}")
    for finding in verdicts.get("findings", []):
        lines.append(f"finding: {finding}")
    lines.append(_resources_line(report["resources"]))
    for notice in report["notices"]:
        lines.append(f"notice [{notice['kind']}]: {notice['message']}")
    if report["partial"]:
        lines.append(f"PARTIAL RUN ({report['stop_reason']})")
    if report.get("snapshot_error"):
        lines.append(f"SNAPSHOT NOT IN THE STORE: {report['snapshot_error']}")
    elif report.get("snapshot"):
        lines.append(f"snapshot {report['snapshot']}")
    return "\n".join(lines)


def _op_lines(name: str, op: dict[str, Any], failing: bool) -> list[str]:
    lat = op["latency_us"]
    cells = " ".join(f"{us(lat.get(k)):>8}" for k, _ in LATENCY_COLUMNS)
    label = f"{name[:22]} !" if failing else name[:24]
    lines = [
        f"{label:24} {op['ok']:>10} {op['errors']:>7} {op['error_rate']:>7.2%} "
        f"{op['throughput']:>11,.1f} {cells}  {op.get('latency_kind', 'round_trip')}"
    ]
    if op.get("latency_by_kind"):
        for kind, figures in op["latency_by_kind"].items():
            cells = " ".join(f"{us(figures.get(k)):>8}" for k, _ in LATENCY_COLUMNS)
            lines.append(f"{'':24} {'':>10} {'':>7} {'':>7} {'':>11} {cells}  {kind}")
    if op.get("down_s"):
        failed = op["counters"].get("connect_failed", 0)
        lines.append(
            f"{'':24}   down: {op['down_s']:g} session-s ({op['down_share']:.2%} of sustain), "
            f"{failed} failed connects"
        )
    if op["errors_by_class"]:
        classes = ", ".join(f"{k}={v}" for k, v in op["errors_by_class"].items())
        lines.append(f"{'':24}   errors: {classes}")
    if op["counters"]:
        counters = ", ".join(f"{k}={v}" for k, v in op["counters"].items())
        lines.append(f"{'':24}   counters: {counters}")
    return lines


def _threshold_line(threshold: dict[str, Any]) -> str:
    mark = "PASS" if threshold["ok"] else "FAIL"
    value = observed(threshold["expr"], threshold["value"])
    return f"threshold {mark}: {threshold['expr']} (observed {value})"


def _resources_line(resources: dict[str, Any]) -> str:
    gen, target, host = resources["generator"], resources["target"], resources["host"]
    line = f"generator cpu peak {_pct(gen['worker_cpu_peak'])} rss {_mib(gen['rss_peak'])}"
    if target:
        line += f"  target cpu peak {_pct(target['cpu_peak'])} rss {_mib(target['rss_peak'])}"
        if "rss_per_connection" in target:
            line += f" ({target['rss_per_connection'] / 1024:.1f} KiB/connection)"
        elif "rss_per_session" in target:
            line += f" ({target['rss_per_session'] / 1024:.1f} KiB/session)"
    if host.get("cpu_mean") is not None:
        line += (
            f"  host cpu mean {_pct(host['cpu_mean'])} "
            f"(ours {_pct(host.get('workers_share_mean'))})"
        )
    return line


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}MiB"


class Progress:
    """A one-line progress display on stderr (rewritten in place on a terminal)."""

    def __init__(self, plan_duration: float, plan_warmup: float, stream: TextIO = sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.total = plan_warmup + plan_duration
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
            text = (
                f"[{event.phase} {event.elapsed:5.1f}/{self.total:.0f}s] "
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
