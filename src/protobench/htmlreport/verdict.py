"""The answer a report page opens on: the verdict, its checks, and the run's key figures.

:func:`verdict` reads the typed report: its outcome is the run's exit code
(:attr:`~protobench.engine.report_model.Report.exit_code`) in one word:
``PASS`` (0, or 5: passed but not saved), ``FAIL`` (1: a threshold or a
built-in check failed) or ``INCONCLUSIVE`` (3: partial, or nothing measured);
one sentence says why, caveats say what limited the run (the generator, a
busy host) and what the plugin found, and every threshold and built-in check
is a row with its expression, its observed value in its unit and whether it
held. :func:`cards` are the sustain phase's key figures (throughput, error
rate, p50, p99, the generator's own delay with the kernel's clock, generator and target
CPU, the target's memory), each a value and a line of detail.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Literal

from protobench.engine.report_model import NO_SESSION_NOTICE, Report
from protobench.engine.summaries import MIXED, LatencySummary, OpSummary
from protobench.vocab.exceptions import ExitCode
from protobench.vocab.thresholds import format_value, observed, parse_threshold

type Outcome = Literal["PASS", "FAIL", "INCONCLUSIVE"]
OUTCOMES: dict[ExitCode, Outcome] = {
    ExitCode.OK: "PASS",
    ExitCode.NOT_SAVED: "PASS",
    ExitCode.FAILED: "FAIL",
    ExitCode.INCOMPLETE: "INCONCLUSIVE",
}
MIB = 1024 * 1024


@dataclass(frozen=True)
class CheckRow:
    """A threshold (the user's) or a built-in check, judged on the sustain phase."""

    ok: bool
    kind: Literal["threshold", "check"]
    expr: str
    observed: str
    scope: str
    note: str = ""


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    exit_code: int
    headline: str
    caveats: list[str]
    rows: list[CheckRow]


@dataclass(frozen=True)
class Card:
    """One key figure: a label, its value in its unit, a line of detail."""

    label: str
    value: str
    detail: str = ""
    tone: Literal["", "bad"] = ""


def _scope(expr: str, op: str | None) -> str:
    with contextlib.suppress(ValueError):
        op = op or parse_threshold(expr).op
    return op or "all operations"


def check_rows(report: Report) -> list[CheckRow]:
    """The thresholds, then the built-in checks, each with its observed value in its unit."""
    rows = [
        CheckRow(t.ok, "threshold", t.expr, observed(t.expr, t.value), _scope(t.expr, None))
        for t in report.thresholds
    ]
    rows += [
        CheckRow(
            c.ok,
            "check",
            c.expr,
            _grouped(c.observed) or observed(c.expr, c.value),
            _scope(c.expr, c.op),
            c.reason or "",
        )
        for c in report.verdicts.checks
    ]
    return rows


def _grouped(text: str) -> str:
    """A count as a person reads it (``239,920``); anything else as it is."""
    return f"{int(text):,}" if text.isdigit() else text


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _headline(report: Report, outcome: Outcome, rows: list[CheckRow]) -> str:
    verdicts = report.verdicts
    if report.nothing_measured:
        why = [n.message for n in report.notices if n.kind == NO_SESSION_NOTICE]
        return f"nothing measured: {verdicts.incomplete_reason or (why or [report.stop_reason])[0]}"
    if report.partial:
        return f"partial run ({report.stop_reason}): its figures are not a whole run's"
    if report.sustain is None:
        return "no sustain phase: nothing to judge"
    failed = [row for row in rows if not row.ok]
    if outcome == "FAIL":
        first = failed[0]
        more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
        return f"{first.expr} failed (observed {first.observed}){more}"
    if not rows:
        return "the run completed; no threshold was set"
    thresholds = sum(row.kind == "threshold" for row in rows)
    counts = ((thresholds, "threshold"), (len(rows) - thresholds, "built-in check"))
    held = " and ".join(_count(n, word) for n, word in counts if n)
    return f"{held}: all held" if len(rows) > 1 else f"{held} held"


def verdict(report: Report) -> Verdict:
    """The outcome in one word and one sentence, the caveats, and every check as a row."""
    code = report.exit_code
    outcome = OUTCOMES.get(code, "INCONCLUSIVE")
    rows = check_rows(report)
    verdicts = report.verdicts
    caveats = []
    if verdicts.generator_bound and verdicts.reason:
        caveats.append(f"generator-bound: {verdicts.reason}")
    if verdicts.host_saturated and verdicts.host_reason:
        caveats.append(f"host saturated: {verdicts.host_reason}")
    caveats += [f"finding: {finding}" for finding in verdicts.findings]
    if report.snapshot_error:
        caveats.append(f"the snapshot is not in the store: {report.snapshot_error}")
    return Verdict(outcome, int(code), _headline(report, outcome, rows), caveats, rows)


def _latency(label: str, summary: LatencySummary, key: str, kind: str) -> Card:
    value = summary.value(key)
    more = [f"{summary.count:,} samples" if summary.count else ""]
    if key == "p99":
        more = [f"p99.9 {format_value('p999', summary.value('p999'))}"]
        more.append(f"max {format_value('max', summary.value('max'))}")
    if kind != "round_trip":
        more.append(kind.replace("_", " "))
    shown = format_value(key, value) if value is not None else "-"
    return Card(label, shown, " · ".join(m for m in more if m))


def _latency_cards(total: OpSummary) -> list[Card]:
    if total.latency_kind != MIXED:
        summary = total.latency_us
        return [_latency(key, summary, key, total.latency_kind) for key in ("p50", "p99")]
    return [
        _latency(f"{key} · {kind.replace('_', ' ')}", summary, key, "round_trip")
        for kind, summary in (total.latency_by_kind or {}).items()
        for key in ("p50", "p99")
    ]


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%" if value >= 10 else f"{value:.1f}%"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / MIB:,.1f} MiB"


def _resource_cards(report: Report) -> list[Card]:
    gen, target = report.resources.generator, report.resources.target
    peak = f"mean of one core · peak {_percent(gen.worker_cpu_peak)}"
    out = [Card("generator CPU", _percent(gen.worker_cpu_mean), peak)]
    if target is None:
        return out
    if target.cpu_mean is not None:
        peak = f"mean of one core · peak {_percent(target.cpu_peak)}"
        out.append(Card("target CPU", _percent(target.cpu_mean), peak))
    if target.rss_peak is not None:
        more = []
        if target.rss_baseline is not None:
            growth = target.rss_peak - target.rss_baseline
            grown = _mib(growth) if abs(growth) >= MIB else f"{growth / 1024:,.0f} KiB"
            more.append(f"+{grown} over the run" if growth >= 0 else f"{grown} over the run")
        if target.rss_per_connection is not None:
            more.append(f"{target.rss_per_connection / 1024:,.1f} KiB per connection")
        elif target.rss_per_session is not None:
            more.append(f"{target.rss_per_session / 1024:,.1f} KiB per session")
        detail = " · ".join(["peak RSS", *more])
        out.append(Card("target memory", _mib(target.rss_peak), detail))
    return out


def cards(report: Report, offered: float | None = None) -> list[Card]:
    """The sustain phase's key figures; ``offered`` is the open model's mean offered rate."""
    sustain = report.sustain
    out: list[Card] = []
    if sustain is not None:
        total = sustain.total
        detail = f"{total.ok:,} ok in {sustain.duration_s:g} s"
        if offered:
            detail = f"of {offered:,.1f}/s offered ({total.throughput / offered:.0%})"
        out.append(Card("throughput", format_value("throughput", total.throughput), detail))
        attempts = total.ok + total.errors
        errors = f"{total.errors:,} of {attempts:,}" if attempts else "no attempt"
        tone: Literal["", "bad"] = "bad" if total.errors else ""
        out.append(Card("error rate", format_value("error_rate", total.error_rate), errors, tone))
        out.extend(_latency_cards(total))
        if (delay := total.generator_delay_us) is not None and delay.count:
            p50 = format_value("p50", delay.value("p50"))
            detail = f"p50 {p50} · kernel receive stamp to the engine, not in the latency"
            out.append(Card("our own delay p99", format_value("p99", delay.value("p99")), detail))
    return out + _resource_cards(report)
