"""What the monitor shows (issue 19): counters, errors by code, p95, many ops, lifecycle."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Static

from protobench.tui import formatting
from protobench.tui.app import MonitorApp
from protobench.tui.baseline import Baseline
from protobench.tui.charts import ERROR_STYLE, OP_STYLES, Series, throughput_chart
from protobench.tui.screens.help import HelpScreen
from protobench.tui.screens.op_filter import OpFilter
from protobench.tui.source import ReplaySource
from protobench.tui.widgets.counter_table import CounterTable
from protobench.tui.widgets.latency_table import delta_text
from protobench.tui.widgets.line_chart import LineChart, coarsen, legend
from tests.support.fake_source import FakeSource
from tests.support.pilot import panel_text, scripted_app, settle, wait_for
from tests.support.scripted_run import Script, scripted_run, scripted_snapshot

pytestmark = pytest.mark.anyio

SIZE = (160, 48)
MANY = Script(ops=("read-property", "read-multiple", "write-property", "cov", "who-is", "rpm", "x"))


def test_numbers_have_thousands_separators() -> None:
    assert formatting.count(1_234_567) == "1,234,567"
    assert formatting.per_second(12_345.6) == "12,346"
    assert formatting.per_second(7.46) == "7.5"


@pytest.mark.parametrize(
    ("us", "shown"),
    [
        (850.0, "850µs"),
        (999.7, "1.00ms"),
        (1_400.0, "1.40ms"),
        (10_000.0, "10.0ms"),
        (123_400.0, "123ms"),
        (999_999.0, "1.00s"),
        (2_500_000.0, "2.50s"),
        (None, "-"),
    ],
)
def test_latencies_keep_three_digits_so_columns_do_not_shift(us: float | None, shown: str) -> None:
    assert formatting.latency(us) == shown


def test_no_two_ops_share_a_colour() -> None:
    assert len(set(OP_STYLES)) == len(OP_STYLES) >= 10
    assert not {ERROR_STYLE.split()[-1], "grey50", "white"} & set(OP_STYLES)


def test_the_legend_wraps_and_names_every_series() -> None:
    series = [Series(name, (1234.0,), "cyan") for name in MANY.ops]
    text = legend(series, lambda v: f"{v:.0f}/s", 60).plain
    assert text.count("\n") >= 2
    assert all(f"{name} 1234/s" in text for name in MANY.ops)
    assert all(len(line) <= 60 for line in text.splitlines())


def test_the_y_scale_grows_at_once_and_does_not_jump_down() -> None:
    chart = LineChart(lambda d: [], str)
    assert chart.scale(90.0) == 100.0
    assert chart.scale(60.0) == 100.0  # a dip does not rescale
    assert chart.scale(30.0) == 50.0  # far below: it shrinks
    assert chart.scale(120.0) == 200.0


def test_coarsen_averages_intervals_from_the_newest() -> None:
    assert coarsen([1.0, 2.0, 3.0, 4.0, 5.0], 2) == [1.0, 2.5, 4.5]


def test_a_change_is_coloured_only_when_diffs_test_finds_it() -> None:
    assert delta_text(120.0, 100.0, True, higher_is_better=True).style == "bold green"
    assert delta_text(120.0, 100.0, True, higher_is_better=False).style == "bold red"
    assert delta_text(120.0, 100.0, False, higher_is_better=True).style == ""
    assert delta_text(120.0, 100.0, None, higher_is_better=True).style == "dim"
    assert isinstance(delta_text(None, 100.0, True, higher_is_better=True), Text)


def test_baseline_significance_uses_the_intervals() -> None:
    baseline = Baseline.from_snapshot(scripted_snapshot(Script(per_second=400)))
    same = baseline.samples["get"]["throughput"]
    assert baseline.significant("get", "throughput", same) is False
    assert baseline.significant("get", "throughput", tuple(v * 3 for v in same)) is True
    assert baseline.significant("nope", "throughput", same) is None
    assert baseline.significant("total", "throughput", (1.0,) * 10) is True
    assert baseline.significant("total", "p99", (1.0,) * 10) is None


async def test_overview_shows_counters_errors_by_code_and_p95() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        counters = panel_text(app, "#counters-now")
        assert "received" in counters
        assert "reconnects" in counters
        assert "down 1.0s" in counters
        assert "in/s 205.5KiB" in counters  # 4,110 × 512 B over 10 s
        assert "out/s" not in counters  # nothing sent


async def test_the_counters_show_bytes_out_per_second_after_bytes_in() -> None:
    app, fake = scripted_app(Script(sent_per_message=128))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        counters = panel_text(app, "#counters-now")
        get = next(line for line in counters.splitlines() if line.startswith("get"))
        assert "in/s 205.5KiB · out/s 51.4KiB" in get  # 4,110 × 128 B over 10 s
        errors = panel_text(app, "#errors-now")
        assert "protocol" in errors
        assert "503×" in errors
        assert "100.00%" in errors
        latency = panel_text(app, "#latency-now")
        assert "p95" in latency.splitlines()[0]
        cells = re.findall(r"[\d.,]+(?:µs|ms|s)\b", latency)
        steady = r"\d{1,3}µs|\d\.\d\dms|\d\d\.\dms|\d{3}ms|\d\.\d\ds"
        assert cells
        assert all(re.fullmatch(steady, cell) for cell in cells), cells
        resources = panel_text(app, "#resources-now")
        assert "fds 50/1,024 (5%)" in resources
        assert "loop lag 1.5 2.5 ms" in resources
        labels = [s.label for s in throughput_chart(app.display_now()).series]
        assert labels[0] == "errors"  # drawn first: the ops' lines stay visible over it
        assert max(app.view.errors_per_second["total"]) > 0


async def test_op_selector_focuses_one_op_and_filter_keeps_matches() -> None:
    app, fake = scripted_app(MANY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("down", "down", "enter")
        assert app.focus == "read-multiple"
        latency = panel_text(app, "#latency-now")
        assert "read-multiple" in latency
        assert "read-property" not in latency
        panel_text(app, "#errors-now")
        assert "errors of read-multiple" in str(app.monitor.query_one("#errors-now").border_title)
        assert "read-multiple" in panel_text(app, "#counters-now")
        assert "read-property" not in panel_text(app, "#counters-now")
        assert [s.label for s in throughput_chart(app.display_now()).series] == [
            "errors",
            "read-multiple",
        ]
        await pilot.press("escape")
        assert app.focus is None
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.screen, OpFilter))
        await pilot.press("w", "r", "enter")
        await wait_for(pilot, lambda: app.op_filter == "wr")
        latency = panel_text(app, "#latency-now")
        assert "write-property" in latency
        assert "cov" not in latency
        assert "read-multiple" not in latency


async def test_op_names_are_not_cut_to_a_common_prefix() -> None:
    app, fake = scripted_app(MANY)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, fake)
        latency = panel_text(app, "#latency-now", width=90)
        assert "read-property" in latency
        assert "read-multiple" in latency


async def test_timescale_keys_and_phase_marks_on_the_chart() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        chart = app.monitor.query_one("#throughput", LineChart)
        assert (2.0, "sustain") in app.view.marks
        axis = next(line for line in chart.render().plain.splitlines() if "└" in line)
        assert "S" in axis  # sustain began inside the chart's span
        await pilot.press("right_square_bracket")
        assert app.span == 2
        await pilot.pause()
        chart.render()
        assert "2 intervals a point" in str(chart.border_subtitle)
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert app.span == 1


async def test_a_stopped_run_shows_its_real_elapsed_time() -> None:
    app, fake = scripted_app(Script(stop_at=5.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        fake.finish()
        await wait_for(pilot, lambda: app.finished)
        header = panel_text(app, "#header")
        assert "0:05 / 0:12" in header


async def test_a_dead_target_is_named_once_in_the_summary() -> None:
    app, fake = scripted_app(Script(target_dies_at=8.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        fake.finish()
        await wait_for(pilot, lambda: app.finished)
        summary = panel_text(app, "#run-summary", width=150)
        assert summary.count("is gone") == 1


async def test_replay_summary_and_s_name_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scripted = scripted_snapshot(Script())
    # a stored report does not know where it was saved
    snapshot = replace(scripted, report=replace(scripted.report, snapshot=None))
    app = MonitorApp(ReplaySource(snapshot, speed=1000.0), refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.finished)
        summary = panel_text(app, "#run-summary", width=150)
        assert "not saved" not in summary
        assert "replayed" in summary
        await pilot.press("s")
        await pilot.pause()
    written = tmp_path / f"{snapshot.id}.report.json"
    assert json.loads(written.read_text())["profile"] == "scripted"


async def test_below_the_minimum_size_the_header_and_progress_stay() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=(59, 24)) as pilot:
        await settle(pilot, app, fake)
        await pilot.pause()
        assert app.monitor.query_one("#header").display
        assert not app.monitor.query_one("#views").display
        assert "SUSTAIN" in panel_text(app, "#header")


async def test_a_counted_run_shows_the_requests_ended_of_its_count() -> None:
    app, fake = scripted_app(Script(requests=100_000))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.pause()
        header = panel_text(app, "#header")
    view = app.display_now().view
    assert view.total is not None
    ended = view.total.ok + view.total.errors
    assert f"{ended:,} / 100,000 requests" in header
    assert "left" not in header


async def test_panels_are_as_tall_as_their_content() -> None:
    app, fake = scripted_app()  # two thresholds, two ops
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.pause()
        assert app.monitor.query_one("#thresholds").outer_size.height == 2 + 2  # rows + border
        assert app.monitor.query_one("#counters-now").outer_size.height == 2 + 2


async def test_help_names_the_new_keys() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "[ ]" in text
        assert "focus it" in text
        assert "whose name contains" in text


async def test_the_counters_panel_grows_when_a_line_folds() -> None:
    """At 120 columns a long op's line folds once reconnects are counted: the panel is a row
    taller."""
    script = Script(ops=("get-with-a-name-that-takes-the-room", "post"), rate=800.0)
    fake = FakeSource(scripted_run(script).events, step=0.02)  # a frame each
    app = MonitorApp(fake, refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app, fake)
        panel = app.monitor.query_one("#counters-now", CounterTable)
        text = panel.render_display(app.display_now())
        rows = text.wrap(app.console, panel.content_size.width)
        assert len(rows) == 3  # get folds onto a second row, then post
        assert panel.content_size.height == len(rows)


def axis_of(app: MonitorApp) -> str:
    chart = app.monitor.query_one("#throughput", LineChart)
    return next(line for line in chart.render().plain.splitlines() if "└" in line)


async def test_pause_and_rate_changes_are_marked_on_the_chart() -> None:
    app, fake = scripted_app(Script(rate=800.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        assert "P" not in axis_of(app)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.view.paused)
        await pilot.pause()
        assert "P" in axis_of(app)
        await pilot.press("plus")
        await wait_for(pilot, lambda: app.view.rate_factor == 1.1)
        await pilot.pause()
        assert "×" in axis_of(app)


async def test_the_errors_view_shows_each_classs_own_share() -> None:
    app, fake = scripted_app(Script(ops=("get",)))  # timeouts and 503s on one op
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("3")
        await pilot.pause()
        op = app.view.ops[0]
        assert set(op.errors_by_class) == {"timeout", "protocol"}
        errors = panel_text(app, "#errors-all", width=156)
        total = sum(op.errors_by_class.values())
        for cls, count in op.errors_by_class.items():
            row = next(line for line in errors.splitlines() if f" {cls} " in line)
            assert f"{count / total:.2%}" in row
            assert f"{count / total:.2%}" != f"{op.error_rate:.2%}"
        assert "503×" in errors
