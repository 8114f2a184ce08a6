"""Pilot tests of the monitor on a fake source: keys send the right commands, the end shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.message import Message
from textual.widgets import ContentSwitcher, Log

from protobench.cli.render import summary_table
from protobench.engine.report_model import to_plain
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.charts import throughput_chart
from protobench.tui.messages import BaselineChosen, CommandSent, NoticeShown, RunEnded
from protobench.tui.screens.baseline_picker import BaselinePicker
from protobench.tui.screens.confirm import ConfirmScreen
from protobench.tui.screens.help import HelpScreen
from protobench.tui.screens.logs import LogsScreen
from protobench.tui.source import ReplaySource
from tests.support.pilot import of_type, panel_text, screen_text, scripted_app, settle, wait_for
from tests.support.scripted_run import Script, scripted_snapshot

pytestmark = pytest.mark.anyio

SIZE = (120, 40)
OPEN = Script(rate=800.0)


def current_view(app: MonitorApp) -> str:
    return app.monitor.query_one("#views", ContentSwitcher).current or ""


async def test_pause_key_pauses_and_resumes_the_load() -> None:
    app, fake = scripted_app()
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.view.paused)
        assert fake.commands == [("pause", None)]
        assert "LOAD PAUSED" in panel_text(app, "#header")
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.view.paused)
        assert fake.commands == [("pause", None), ("resume", None)]
    sent = [(m.command, m.value) for m in of_type(messages, CommandSent)]
    assert sent == [("pause", None), ("resume", None)]


async def test_plus_and_minus_change_the_rate_in_the_open_model() -> None:
    app, fake = scripted_app(OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("plus", "plus", "minus")
        await wait_for(pilot, lambda: len(fake.commands) == 3)
        assert fake.commands == [("rate", 1.1), ("rate", 1.2), ("rate", 1.1)]
        await wait_for(pilot, lambda: app.view.rate_factor == 1.1)
        header = panel_text(app, "#header")
        # + and - add or take 10% of the base rate (not ×1.1 each): said as such
        assert "open model · 880/s (base 800/s +10%)" in header


async def test_after_a_live_rate_change_both_summaries_say_the_rate_it_changed_to() -> None:
    """Issue 30: the summary said the plan's rate after ``+`` had raised it."""
    app, fake = scripted_app(OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("plus", "plus")
        await wait_for(pilot, lambda: app.view.rate_factor == 1.2)
        fake.finish()
        await wait_for(pilot, lambda: app.finished)
        await pilot.pause()
        summary = panel_text(app, "#run-summary", width=160)
        assert "rate 800/s → 880/s (base +10%) at 0:00 → 960/s (base +20%) at 0:00" in summary
        report = app.view.report
        assert report is not None
        plain = summary_table(report)
        changed = "rate changed live: 880/s (base +10%) at 0.0s, 960/s (base +20%) at 0.0s"
        assert f"open model, 800/s over 16 sessions; {changed}" in plain


async def test_rate_keys_do_nothing_in_the_closed_model() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("plus", "minus", "t")
        await pilot.pause()
        assert fake.commands == []
        assert app.corrected


async def test_t_toggles_uncorrected_latency_in_the_open_model() -> None:
    app, fake = scripted_app(OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        table = app.monitor.query_one("#latency-now")
        corrected = panel_text(app, "#latency-now")
        assert table.border_title == "latency · last 10s · corrected"
        await pilot.press("t")
        uncorrected = panel_text(app, "#latency-now")
        assert not app.corrected
        assert table.border_title == "latency · last 10s · uncorrected"
        assert corrected != uncorrected
        total = app.view.total
        assert total is not None
        # The scripted uncorrected latencies are 3/4 of the corrected ones.
        assert total.latency["window_uncorrected"]["p50"] < total.latency["window"]["p50"]


async def test_baseline_overlay_appears_beside_the_live_figures(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    baseline = scripted_snapshot(Script(per_second=300, seed=11))
    store.write(baseline.id, to_plain(baseline))
    app, fake = scripted_app(store=store)
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BaselinePicker))
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.baseline is not None)
        assert app.baseline is not None
        assert app.baseline.id == baseline.id
        table = panel_text(app, "#latency-now")
        assert table.count("↳ base") == 3  # get, post and the total
        labels = [s.label for s in throughput_chart(app.display_now()).series]
        assert labels == ["errors", "baseline", "get", "post", "total"]
        assert f"vs {baseline.id[:24]}" in panel_text(app, "#header")
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BaselinePicker))
        await pilot.press("enter")  # the first option removes the overlay
        await wait_for(pilot, lambda: app.baseline is None)
    chosen = of_type(messages, BaselineChosen)
    assert [m.baseline.id if m.baseline else None for m in chosen] == [baseline.id, None]


async def test_the_summary_appears_at_the_end_and_stays() -> None:
    app, fake = scripted_app()
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot, app, fake)
        assert current_view(app) == "overview"
        fake.finish()
        await wait_for(pilot, lambda: app.finished)
        await pilot.pause()
        assert current_view(app) == "summary"
        summary = panel_text(app, "#run-summary")
        assert "✔ COMPLETED · exit code 0" in summary
        assert "snapshot .protobench/snapshots/scripted.json.gz" in summary
        assert "✔ p99 < 20ms" in summary
        await pilot.press("1")
        assert current_view(app) == "overview"
        await pilot.press("5")
        assert current_view(app) == "summary"
        assert app.is_running
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 0
    assert len(of_type(messages, RunEnded)) == 1


async def test_q_asks_once_then_stops_and_saves() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await pilot.pause()
        assert fake.commands == []
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: app.finished)
        assert fake.commands == [("stop", "stopped")]
        summary = panel_text(app, "#run-summary")
        assert "PARTIAL RUN: stopped · exit code 3" in summary
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 3


async def test_ctrl_c_stops_at_once_and_the_ui_stays_up() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: app.finished)
        assert fake.commands == [("stop", "interrupted")]
        assert app.is_running
        assert "PARTIAL RUN: interrupted" in panel_text(app, "#run-summary")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)


async def test_a_worker_crash_is_shown() -> None:
    app, fake = scripted_app(Script(crash_at=5.0))
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot, app, fake)
        notices = [m.notice for m in of_type(messages, NoticeShown)]
        assert [(n.kind, n.details.get("worker")) for n in notices] == [("worker", 1)]
        assert "✘ worker 1 died (exit 1)" in panel_text(app, "#resources-now")
        await pilot.press("3")
        log = panel_text(app, "#notices")
        assert "worker 1 (pid 4101) failed: exited with code 1" in log
        assert "RuntimeError: scripted crash" in log
        assert app.is_running


async def test_a_dead_target_is_shown() -> None:
    app, fake = scripted_app(Script(target_dies_at=8.0))
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot, app, fake)
        kinds = [m.notice.kind for m in of_type(messages, NoticeShown)]
        assert kinds == ["target"]
        assert "target process is gone!" in panel_text(app, "#resources-now")
        errors = panel_text(app, "#errors-now")
        assert "refused" in errors
        assert "connection refused" in errors


async def test_number_keys_switch_views() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        for key, view in (("2", "latency"), ("3", "errors"), ("4", "resources"), ("1", "overview")):
            await pilot.press(key)
            assert current_view(app) == view
        await pilot.press("5")  # the summary only exists at the end
        assert current_view(app) == "overview"


async def test_a_small_terminal_gets_a_clear_message() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=(58, 19)) as pilot:
        await settle(pilot, app, fake)
        message = app.monitor.query_one("#too-small")
        assert message.display
        assert not app.monitor.query_one("#views").display
        text = str(message.render())
        assert "58×19" in text
        assert "60×20" in text
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        assert not message.display
        assert app.monitor.query_one("#views").display


async def test_s_writes_the_json_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("s")  # no report before the end
        assert not app.check_action("save_report", ())
        fake.finish()
        await wait_for(pilot, lambda: app.finished)
        await pilot.press("s")
        await pilot.pause()
    written = json.loads((tmp_path / "scripted.report.json").read_text())
    assert app.view.report is not None
    assert written == to_plain(app.view.report)  # the --json output's keys and values


async def test_l_shows_the_worker_logs(tmp_path: Path) -> None:
    (tmp_path / "worker-0.log").write_text("worker 0 started\nworker 0 opened 8 sessions\n")
    (tmp_path / "target.log").write_text("listening\n")
    app, fake = scripted_app(log_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen))
        await pilot.pause()
        log = app.screen.query_one("#log", Log)
        assert log.lines == ["listening"]  # target.log sorts first
        await pilot.press("down")
        await pilot.pause()
        assert log.lines == ["worker 0 started", "worker 0 opened 8 sessions"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.monitor)


async def test_question_mark_opens_help() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.monitor)


async def test_replay_keys_pause_seek_and_change_speed() -> None:
    source = ReplaySource(scripted_snapshot(Script()), speed=4.0)
    app = MonitorApp(source, refresh=0.0, chart_refresh=0.0, speed=4.0)
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await wait_for(pilot, lambda: app.view.state == "running")
        await pilot.press("p", "plus", "minus", "minus", "right", "left")
        await wait_for(pilot, lambda: len(of_type(messages, CommandSent)) == 6)
        assert source.paused
        assert source.speed == 2.0
        assert "PLAYBACK PAUSED" in panel_text(app, "#header")
        await pilot.press("q")  # a replay quits at once
        await wait_for(pilot, lambda: not app.is_running)
    sent = [(m.command, m.value) for m in of_type(messages, CommandSent)]
    assert sent == [
        ("pause", None),
        ("speed", 8.0),
        ("speed", 4.0),
        ("speed", 2.0),
        ("seek", 10),
        ("seek", -10),
    ]
    assert app.return_value == 0


async def test_generator_bound_is_shown_loudly() -> None:
    app, fake = scripted_app(Script(worker_cpu=95.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        banner = app.monitor.query_one("#verdict")
        assert banner.has_class("-active")
        assert banner.display
        text = panel_text(app, "#verdict")
        assert "GENERATOR-BOUND" in text
        assert "a worker process used >= 90% of a core" in text
        assert "GENERATOR-BOUND" in panel_text(app, "#header")


async def test_no_banner_when_the_generator_keeps_up() -> None:
    app, fake = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        assert not app.monitor.query_one("#verdict").display


async def test_a_saturated_host_is_shown_with_its_figures() -> None:
    app, fake = scripted_app(Script(duration=4.0, worker_cpu=3.0, host_cpu=99.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, fake)
        assert app.monitor.query_one("#verdict").display
        text = " ".join(panel_text(app, "#verdict", width=156).split())
        assert "HOST-SATURATED" in text
        assert "our workers 8%, target 36%, others 55% of its 2 cores" in text
        assert "HOST-SATURATED" in panel_text(app, "#header")
        assert "GENERATOR-BOUND" not in text


async def test_at_80x24_the_banner_says_what_it_means_before_its_figures() -> None:
    """The compact banner has two lines: the figures come after the meaning, so a cut
    banner still says it (it used to end mid-figure, the meaning cut off)."""
    app, fake = scripted_app(Script(duration=4.0, worker_cpu=3.0, host_cpu=99.0))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app, fake)
        screen = screen_text(app)
        assert "HOST-SATURATED: these figures measure a starved host." in screen, screen
