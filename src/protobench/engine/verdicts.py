"""The run's verdicts: did it measure anything, did every op work, and what limited it.

Judged on the report's sustain phase (and the tallies of its resource samples
and intervals), in this order:

* **incomplete** (exit 3): the run was stopped, no session could open, no
  sustain phase was measured, or the sustain phase completed no exchange (no
  success, and no failure the peer answered: a 503 or a NACK is an exchange,
  a timeout or a refused connection is not).
  :func:`incomplete_reason` says which, thresholds or not.
* **built-in checks** (exit 1, like a threshold): unless the profile says
  otherwise, every op succeeded at least once in the run (``ok[OP] > 0``
  over every phase; a user threshold on ``ok`` for that op, or on ``ok`` for
  the total, replaces it) and, in a run of several ops, stays under each of
  the profile's error-rate thresholds (``error_rate[OP] < X`` for each
  ``error_rate < X``; a user ``error_rate[OP]`` threshold replaces it), and
  the sessions were down
  (without a connection while they wanted one) for less than
  :data:`DOWN_BOUND` of sustain (``down < 5%``; any user threshold on ``down``
  replaces it). :func:`builtin_checks` lists them.
* **generator_bound**: our processes were the limit (bounds in
  :mod:`engine.bounds`); **host_saturated**: the host's CPU was busy and
  our processes were not the cause. When the host is saturated, the
  lateness and lag it causes are named as its symptoms, not the generator's.
* **findings**: the generator's own delay when it is large beside the latency
  (:func:`delay_findings`), then what the protocol plugin diagnoses from its
  counters.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from protobench.engine.bounds import (
    BEHIND_BOUND_MIN,
    BEHIND_BOUND_SHARE,
    BEHIND_NS,
    CPU_BOUND_PERCENT,
    CPU_BOUND_SHARE,
    HOST_BUSY_PERCENT,
    HOST_OTHERS_PERCENT,
    HOST_SATURATED_SHARE,
    LAG_BOUND_MS,
    LAG_BOUND_SHARE,
    LATE_BOUND_SHARE,
    READ_BOUND_NS,
    Tally,
)
from protobench.engine.report_model import CheckResult, CpuVerdict, HostResources, Report
from protobench.engine.summaries import EMPTY_OP, OpSummary, PhaseSummary
from protobench.engine.thresholds import evaluate_all
from protobench.vocab.counters import BEHIND
from protobench.vocab.thresholds import Threshold, format_value, parse_threshold

DELAY_SHARE = 1.0
"""Closed model: a generator delay (p50) from this share of the latency's p50 on is a finding
(the replies waited longer for the generator than the server took to answer them)."""
OPEN_DELAY_US = READ_BOUND_NS / 1000
"""Open model: a generator delay (p50) past the lazy reads' bound is a finding."""
DOWN_BOUND = 0.05
"""The built-in check's bound on the sessions' down time, as a share of sustain."""
DOWN_CHECK = f"down < {DOWN_BOUND:.0%}"
REPLY_CLASSES = ("protocol", "validation", "auth")
"""Error classes of an exchange the peer did answer (the others never completed)."""


def delay_findings(sustain: PhaseSummary | None, open_model: bool) -> list[str]:
    """One line per op whose replies waited long in the generator (kernel clock only).

    The latencies exclude that wait (they end at the kernel's receive stamp), but
    in the closed model each session waits it out before its next request, so
    the run's throughput is the generator's: a finding when the delay's p50 is
    more than :data:`DELAY_SHARE` of the latency's p50. The open model reads replies
    lazily on purpose (up to its next send), so only a delay past that bound
    (:data:`OPEN_DELAY_US`) is one: the generator is behind.
    """
    if sustain is None:
        return []
    found = []
    for op, figures in sustain.ops.items():
        delay = figures.generator_delay_us
        latency = figures.latency_us.p50
        if delay is None or delay.p50 is None or not latency:
            continue
        if open_model and delay.p50 > OPEN_DELAY_US:
            found.append(
                f"{op}: replies waited {delay.p50:,.0f} µs (p50) in the generator before it took"
                f" them up, past its lazy reads' {OPEN_DELAY_US:,.0f} µs: the generator is behind"
                " (more --processes); the latencies exclude the wait (kernel clock)"
            )
        elif not open_model and delay.p50 > DELAY_SHARE * latency:
            found.append(
                f"{op}: replies waited {delay.p50:,.0f} µs (p50) in the generator before it took"
                f" them up, {delay.p50 / latency:.1f}x the latency's p50 ({latency:,.0f} µs):"
                " each session waited that long before its next request, so the throughput is"
                " the generator's (more --processes); the latencies exclude the wait (kernel"
                " clock)"
            )
    return found


def incomplete_reason(report: Report, passive: Collection[str] = frozenset()) -> str | None:
    """Why the run measured nothing that can be judged (exit 3), or None.

    ``passive`` names the ops that exchange nothing by design: a run of only
    those is judged by its sessions, not by exchanges.
    """
    if report.partial:
        return f"the run did not complete ({report.stop_reason})"
    opened = sum(w.sessions_opened for w in report.workers)
    failed = sum(w.sessions_failed for w in report.workers)
    sustain = report.sustain
    if report.workers and opened == 0 and failed:
        return f"no session could open ({failed} failed){_last_error(sustain)}"
    if sustain is None:
        return "no sustain phase was measured"
    total = sustain.total
    active = [op for name, op in sustain.ops.items() if name not in passive]
    if active and sum(completed(op) for op in active) == 0:
        if total.errors:
            classes = ", ".join(f"{k}={v}" for k, v in total.errors_by_class.items())
            what = f"{total.errors} errors: {classes}{_last_error(sustain)}"
        else:
            what = "no reply and no error: every exchange was still pending at its end"
        return f"the sustain phase completed no exchange ({what})"
    return None


def completed(scope: OpSummary) -> int:
    """Exchanges that got a reply: successes and failures the peer answered (a 503, a NACK)."""
    return scope.ok + sum(scope.errors_by_class.get(c, 0) for c in REPLY_CLASSES)


def _last_error(section: PhaseSummary | None) -> str:
    last = section.total.last_errors if section is not None else None
    return f"; last error: {next(iter(last.values()))}" if last else ""


def builtin_checks(thresholds: Sequence[Threshold], ops: Sequence[str]) -> list[Threshold]:
    """The checks a run gets by default, minus those the profile's thresholds replace."""
    checks: list[Threshold] = []
    ok_ops = {t.op for t in thresholds if t.metric == "ok"}
    rate_ops = {t.op for t in thresholds if t.metric == "error_rate" and t.op}
    rates = [t for t in thresholds if t.metric == "error_rate" and t.op is None]
    for op in ops:
        if None not in ok_ops and op not in ok_ops:
            checks.append(parse_threshold(f"ok[{op}] > 0"))
        if len(ops) > 1 and op not in rate_ops:  # one op: the total's threshold is its own
            checks.extend(
                Threshold(
                    f"error_rate[{op}] {t.comparator} {format_value(t.metric, t.limit)}",
                    t.metric,
                    op,
                    t.comparator,
                    t.limit,
                )
                for t in rates
            )
    if not any(t.metric == "down" for t in thresholds):
        checks.append(parse_threshold(DOWN_CHECK))
    return checks


def evaluate_checks(
    checks: Sequence[Threshold], phases: Mapping[str, PhaseSummary]
) -> list[CheckResult]:
    """The checks' results on the run's phases, each failed one with the reason in a sentence."""
    sustain = phases.get("sustain")
    results = []
    drain = phases.get("drain")
    for check, found in zip(checks, evaluate_all(checks, sustain, drain), strict=True):
        value, ok = found.value, found.ok
        if check.metric == "ok" and check.op:  # once in the whole run (a periodic op may
            # have renewed its subscription in warmup only), not necessarily in sustain
            ran = sum(op.ok for p in phases.values() if (op := p.ops.get(check.op)) is not None)
            value, ok = float(ran), ran > check.limit
        observed = format_value(check.metric, value)
        results.append(
            CheckResult(
                expr=check.expr,
                value=value,
                ok=ok,
                op=check.op,
                observed=observed,
                reason=None if ok else _check_reason(check, observed, sustain),
            )
        )
    return results


def _check_reason(check: Threshold, observed: str, sustain: PhaseSummary | None) -> str:
    scope = (sustain.scope(check.op) if sustain is not None else None) or EMPTY_OP
    if check.metric == "ok":
        last = scope.last_errors
        why = f"; last error: {next(iter(last.values()))}" if last else ""
        return (
            f"op {check.op} never succeeded ({scope.errors} errors in sustain{why}); "
            f"relax with a threshold on ok[{check.op}]"
        )
    if check.metric == "down":
        failed = scope.counters.get("connect_failed", 0)
        return (
            f"the sessions were without a connection for {observed} of sustain "
            f"({scope.down_s:g} session-seconds, {failed} failed connects); "
            f"relax with a threshold on down, e.g. 'down < 20%'"
        )
    return (
        f"op {check.op}: error rate {observed} against the profile's "
        f"error_rate {check.comparator} {format_value(check.metric, check.limit)}; "
        f"relax with a threshold on error_rate[{check.op}]"
    )


def cpu_verdicts(
    open_model: bool,
    sustain: PhaseSummary | None,
    host: HostResources,
    busy_samples: Tally,
    lagging_intervals: Tally,
    host_busy: Tally,
) -> CpuVerdict:
    """``generator_bound`` and ``host_saturated`` with their reasons and figures.

    ``host`` gives the means named in the host's reason.
    """
    total = sustain.total if sustain is not None else EMPTY_OP
    arrivals = total.arrivals
    late_fraction = total.late_share if open_model else 0.0
    behind_count = total.counters.get(BEHIND, 0)
    behind = behind_count / arrivals if open_model and arrivals else 0.0
    found: list[tuple[bool, str]] = []
    """(a symptom the host can cause, the reason) in the order they are judged."""
    if behind >= BEHIND_BOUND_SHARE and behind_count >= BEHIND_BOUND_MIN:
        found.append(
            (
                True,
                f"the open model's driver took up {behind:.1%} of the arrivals more than "
                f"{BEHIND_NS / 1e6:.0f} ms after their intended time",
            )
        )
    busy = busy_samples.total > 0 and busy_samples.share >= CPU_BOUND_SHARE
    if busy and (not open_model or late_fraction > LATE_BOUND_SHARE):
        found.append(
            (
                False,
                f"a worker process used >= {CPU_BOUND_PERCENT:.0f}% of a core in "
                f"{busy_samples.share:.0%} of the sustain samples",
            )
        )
    if lagging_intervals.total and lagging_intervals.share >= LAG_BOUND_SHARE:
        found.append(
            (
                True,
                f"the workers' event loops lagged >= {LAG_BOUND_MS:.0f} ms in "
                f"{lagging_intervals.share:.0%} of the sustain intervals",
            )
        )
    saturated = host_busy.total > 0 and host_busy.share >= HOST_SATURATED_SHARE
    ours = [text for symptom, text in found if not (saturated and symptom)]
    host_reasons: list[str] = []
    if saturated:
        host_reasons.append(
            f"the host's CPU was >= {HOST_BUSY_PERCENT:.0f}% busy, >= {HOST_OTHERS_PERCENT:.0f}% "
            f"of it other processes', in {host_busy.share:.0%} of the sustain samples "
            f"(mean: host {_pct(host.cpu_mean)}, our workers "
            f"{_pct(host.workers_share_mean)}, target {_pct(host.target_share_mean)},"
            f" others {_pct(host.others_share_mean)} of its {host.cpus} cores)"
        )
        host_reasons.extend(text for symptom, text in found if symptom)
    if late_fraction > LATE_BOUND_SHARE and (ours or host_reasons):
        (ours or host_reasons).append(
            f"the open model fell behind: {late_fraction:.1%} of arrivals were late"
        )
    if ours:
        ours[-1] += " (add --processes or cores)"
    if host_reasons:
        host_reasons[-1] += " (stop the other load or run on a quieter host)"
    return CpuVerdict(
        generator_bound=bool(ours),
        reason="; ".join(ours) or None,
        host_saturated=saturated,
        host_reason="; ".join(host_reasons) or None,
        host_saturated_share=round(host_busy.share, 3),
        late_fraction=round(late_fraction, 6),
    )


def _pct(value: float | None) -> str:
    return "absent" if value is None else f"{value:.0f}%"
