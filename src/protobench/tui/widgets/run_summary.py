"""The end of the run: outcome, per-operation table, thresholds, verdicts, snapshot path."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from protobench.engine.figures import rate_changes
from protobench.engine.report_model import Report, ThresholdResult, to_plain
from protobench.engine.summaries import PhaseSummary
from protobench.tui import formatting
from protobench.tui.display import Display
from protobench.tui.view import is_alert
from protobench.tui.widgets.latency_table import delta_text
from protobench.tui.widgets.panel import Panel
from protobench.tui.widgets.threshold_list import delay_line, observed
from protobench.vocab.thresholds import LATENCY_COLUMNS

PERCENTILES = LATENCY_COLUMNS
NARROW = 80
"""Below this width the table keeps ok, err%, ops/s, p50 and p99."""
WIDE = 110
"""Below this width the table leaves out p90 and max."""


def outcome(report: Report, exit_code: int | None) -> Text:
    """One line: completed, failed (thresholds, checks), nothing measured, or partial."""
    code = f" · exit code {exit_code}" if exit_code is not None else ""
    verdicts = report.verdicts
    if report.partial:
        return Text(f"⚠ PARTIAL RUN: {report.stop_reason}{code}", "bold yellow")
    if verdicts.incomplete_reason:
        return Text(f"✘ NOTHING MEASURED: {verdicts.incomplete_reason}{code}", "bold red")
    if not verdicts.thresholds_passed:
        return Text(f"✘ THRESHOLDS FAILED{code}", "bold red")
    if not verdicts.checks_passed:
        return Text(f"✘ CHECKS FAILED{code}", "bold red")
    return Text(f"✔ COMPLETED{code}", "bold green")


def snapshot_line(report: Report, source: str) -> Text:
    """Where the snapshot is; a replay reads one (nothing to save), a live run may fail to."""
    snapshot = report.snapshot
    line = Text("snapshot ", "bold")
    if source == "replay":
        line.append(f"replayed from {snapshot}" if snapshot else "replayed", "cyan")
    elif snapshot:
        line.append(str(snapshot), "bold cyan")
    else:
        line.append("not saved", "red")
    return line


class RunSummary(Panel):
    """The final report on screen until the user quits."""

    SIZED = True
    """The table's columns are the panel's width's: built when drawn."""

    def render_display(self, display: Display) -> RenderableType:
        view = display.view
        self.border_title = "summary"
        report = view.report
        if report is None:
            if display.error:
                return Group(
                    Text(f"✘ {display.error}", "bold red"),
                    Text("l the worker and target logs · q quit (exit code 3)", "dim"),
                )
            return Text("The summary appears here when the run ends.", "dim")
        parts: list[RenderableType] = [outcome(report, view.exit_code)]
        sustain = report.sustain
        model = report.model
        parts.append(Text(f"{report.profile} · {report.protocol} → {report.target}"))
        if sustain is None:
            parts.append(Text("no sustain phase was measured", "yellow"))
        else:
            load = f"{model.type} model · {model.sessions} sessions"
            if model.rate:
                load += f" · rate {formatting.rate(model.rate)}/s"
                for at, factor in rate_changes(report):
                    load += (
                        f" → {formatting.rate(model.rate * factor)}/s "
                        f"(base {formatting.share_change(factor)}) at {formatting.clock(at)}"
                    )
            parts.append(
                Text(
                    f"sustain {sustain.duration_s:.1f}s · {load} · {_workers(report.processes)}",
                    "dim",
                )
            )
            parts.append(self._table(sustain, display))
        parts.extend(self._thresholds(report.thresholds, report.nothing_measured))
        delay = sustain.total.generator_delay_us if sustain is not None else None
        if delay is not None and delay.count:
            line = delay_line(to_plain(delay))
            line.append("  (replies waiting in protobench after the kernel's stamp)", "dim")
            parts.append(line)
        verdicts = report.verdicts
        for check in verdicts.checks:
            if not check.ok:
                parts.append(Text(f"✘ {check.expr}: {check.reason}", "red"))
        if verdicts.generator_bound:
            parts.append(Text(f"⚠ GENERATOR-BOUND: {verdicts.reason}", "bold red"))
        if verdicts.host_saturated:
            parts.append(Text(f"⚠ HOST-SATURATED: {verdicts.host_reason}", "bold red"))
        for finding in verdicts.findings:
            parts.append(Text(f"finding: {finding}", "yellow"))
        parts.append(self._resources(report))
        for notice in view.notices:
            if is_alert(notice):
                parts.append(Text(f"{notice.kind}: {notice.message}", "red"))
        parts.append(snapshot_line(report, display.source))
        if report.snapshot_error:
            parts.append(Text(report.snapshot_error, "bold red"))
        parts.append(Text("s write the JSON report · q quit · 1-4 the run's views", "dim"))
        return Group(*parts)

    def columns(self) -> tuple[list[str], list[tuple[str, str]]]:
        """The count columns and the percentiles that fit the panel's width."""
        width = self.content_size.width
        if 0 < width < NARROW:
            return ["ok", "err%", "ops/s"], [c for c in PERCENTILES if c[0] in ("p50", "p99")]
        if 0 < width < WIDE:
            kept = ("p50", "p95", "p99", "p999")
            return ["ok", "err", "err%", "ops/s"], [c for c in PERCENTILES if c[0] in kept]
        return ["ok", "err", "err%", "ops/s"], list(PERCENTILES)

    def _table(self, sustain: PhaseSummary, display: Display) -> Table:
        baseline = display.baseline
        counts, percentiles = self.columns()
        table = Table(
            box=box.SIMPLE_HEAD, expand=True, pad_edge=False, padding=(0, 1), show_edge=False
        )
        ops = sustain.ops
        rows = [*ops.items(), *([("total", sustain.total)] if len(ops) > 1 else [])]
        names = max((len(name) for name, _ in rows), default=2) + 2
        table.add_column("op", no_wrap=True, overflow="ellipsis", min_width=min(names, 26))
        for header in counts:
            table.add_column(header, justify="right", no_wrap=True)
        for _, header in percentiles:
            table.add_column(header, justify="right", no_wrap=True)
        if baseline is not None:
            table.add_column("Δops/s", justify="right", no_wrap=True)
            table.add_column("Δp99", justify="right", no_wrap=True)
        checks = display.view.report.verdicts.checks if display.view.report else []
        failing = {c.op for c in checks if not c.ok}
        live_samples = {op.name: op.samples for op in display.view.ops}
        for name, scope in rows:
            uncorrected = scope.latency_uncorrected_us if display.latency_key else None
            latency = uncorrected or scope.latency_us
            style = "bold" if name == "total" else ""
            figures = {
                "ok": Text(formatting.count(scope.ok), style),
                "err": Text(formatting.count(scope.errors), "red" if scope.errors else style),
                "err%": Text(f"{scope.error_rate:.2%}", style),
                "ops/s": Text(formatting.per_second(scope.throughput), style),
            }
            cells = [
                Text(f"{name} ✘", "bold red") if name in failing else Text(name, style),
                *(figures[column] for column in counts),
                *(Text(formatting.latency(latency.value(k)), style) for k, _ in percentiles),
            ]
            if baseline is not None:
                base = baseline.figures(name, corrected=not display.latency_key)
                samples = live_samples.get(name, {})
                cells.append(
                    delta_text(
                        scope.throughput,
                        baseline.throughput.get(name),
                        baseline.significant(name, "throughput", samples.get("throughput", ())),
                        higher_is_better=True,
                    )
                )
                cells.append(
                    delta_text(
                        latency.p99,
                        base.get("p99"),
                        baseline.significant(name, "p99", samples.get("p99", ())),
                        higher_is_better=False,
                    )
                )
            table.add_row(*cells)
        return table

    def _thresholds(self, thresholds: list[ThresholdResult], nothing_measured: bool) -> list[Text]:
        if nothing_measured:
            return [Text(f"– {t.expr}  not evaluated: nothing measured", "dim") for t in thresholds]
        lines = []
        for item in thresholds:
            line = Text("✔ " if item.ok else "✘ ", "bold green" if item.ok else "bold red")
            line.append(f"{item.expr}  observed {observed(item.expr, item.value)}")
            lines.append(line)
        return lines

    def _resources(self, report: Report) -> Text:
        generator, target = report.resources.generator, report.resources.target
        text = Text("generator cpu peak ", "dim")
        text.append(_percent(generator.worker_cpu_peak))
        text.append(" rss ", "dim")
        text.append(formatting.size(generator.rss_peak))
        if target:
            text.append(" · target cpu peak ", "dim")
            text.append(_percent(target.cpu_peak))
            text.append(" rss ", "dim")
            text.append(formatting.size(target.rss_peak))
            if target.rss_per_connection is not None:
                text.append(f" ({formatting.size(target.rss_per_connection)}/connection)")
            elif target.rss_per_session is not None:
                text.append(f" ({formatting.size(target.rss_per_session)}/session)")
        return text


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value}%"


def _workers(count: int) -> str:
    return f"{count} worker process{'es' if count != 1 else ''}"
