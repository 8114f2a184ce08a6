"""Baseline as a first-class feature: --baseline, the picker's columns and filter, the warning."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import OptionList
from typer.testing import CliRunner

from protobench.cli import app as cli
from protobench.engine.report_model import to_plain
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.baseline import Baseline
from protobench.tui.screens.baseline_picker import BaselinePicker, date_of, profile_of
from protobench.tui.widgets.run_summary import RunSummary
from tests.support.fake_source import FakeSource
from tests.support.pilot import panel_text, settle, wait_for
from tests.support.scripted_run import Script, scripted_run, scripted_snapshot

pytestmark = pytest.mark.anyio

SIZE = (160, 48)
OTHER = "20231115-090000-mqtt-fanout-beef"


def stored(tmp_path: Path) -> SnapshotStore:
    store = SnapshotStore(tmp_path)
    same = scripted_snapshot(Script(per_second=300, seed=11))
    store.write(same.id, to_plain(same))
    other = scripted_snapshot(Script(per_second=300, seed=12))
    other = replace(other, id=OTHER, report=replace(other.report, profile="mqtt-fanout"))
    store.write(OTHER, to_plain(other))
    return store


def test_an_id_names_its_profile_and_date() -> None:
    assert profile_of(OTHER) == "mqtt-fanout"
    assert date_of(OTHER) == "2023-11-15 09:00"


def test_a_bad_baseline_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    runner = CliRunner()
    for command in (
        ["run", "http-get", "--baseline", "nope", "--snapshots-dir", str(tmp_path)],
        ["replay", "latest", "--baseline", "nope", "--snapshots-dir", str(tmp_path)],
    ):
        if command[0] == "replay":
            stored(tmp_path)
        result = runner.invoke(cli, command)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1
        assert "--baseline" in lines[0]
        assert "nope" in lines[0]


async def test_run_with_a_baseline_shows_it_from_the_start(tmp_path: Path) -> None:
    store = stored(tmp_path)
    baseline = Baseline.load(store, "20231114-221320-scripted-0000")
    fake = FakeSource(scripted_run(Script()).events)
    app = MonitorApp(fake, store, refresh=0.0, chart_refresh=0.0, baseline=baseline)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        assert panel_text(app, "#latency-now").count("↳ base") == 3
        assert not [n for n in app._notifications if n.severity == "warning"]


async def test_a_baseline_of_another_profile_is_warned_about(tmp_path: Path) -> None:
    store = stored(tmp_path)
    baseline = Baseline.load(store, OTHER)
    fake = FakeSource(scripted_run(Script()).events)
    app = MonitorApp(fake, store, refresh=0.0, chart_refresh=0.0, baseline=baseline)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert any("profile mqtt-fanout" in w and "scripted" in w for w in warnings)


async def test_the_picker_lists_the_runs_profile_with_its_figures(tmp_path: Path) -> None:
    store = stored(tmp_path)
    fake = FakeSource(scripted_run(Script()).events)
    app = MonitorApp(fake, store, refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BaselinePicker))
        picker = app.screen
        assert isinstance(picker, BaselinePicker)
        listing = picker.query_one("#snapshots", OptionList)

        def prompts() -> list[str]:
            return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]

        await wait_for(pilot, lambda: "ops/s" in "".join(prompts()))
        assert len(prompts()) == 1
        assert "scripted" in prompts()[0]
        assert "2023-11-14 22:13" in prompts()[0]
        assert "p99 " in prompts()[0]
        await pilot.press("a")
        await pilot.pause()
        assert len(prompts()) == 2
        assert "mqtt-fanout" in prompts()[0]


async def test_the_summary_colours_the_baselines_deltas_by_diffs_test(tmp_path: Path) -> None:
    store = stored(tmp_path)  # the baseline ran 300/s, this run 400/s
    baseline = Baseline.load(store, "20231114-221320-scripted-0000")
    fake = FakeSource(scripted_run(Script()).events)
    app = MonitorApp(fake, store, refresh=0.0, chart_refresh=0.0, baseline=baseline)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        fake.finish()
        await wait_for(pilot, lambda: app.finished)
        summary = app.monitor.query_one("#run-summary", RunSummary)
        shown = summary.render_display(app.display_now())
        assert isinstance(shown, Group)
        table = next(r for r in shown.renderables if isinstance(r, Table))
        column = next(c for c in table.columns if c.header == "Δops/s")
        get = next(iter(column.cells))
        assert isinstance(get, Text)
        assert get.plain.startswith("+")
        assert get.style == "bold green"  # better, and diff's test finds it significant
        assert "Δops/s" in panel_text(app, "#run-summary", width=156)
