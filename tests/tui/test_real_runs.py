"""The monitor on real runs' figures (issue 19): embedded targets, short bounded runs, replayed.

Each profile runs headless for one second of warmup and two of sustain
against its embedded target on loopback (``protobench run ... --json``) into
a temporary store; its snapshot is replayed in the monitor at 160×48 and the
panels are read as text: what a protocol records is what the screen shows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader
from protobench.profiles.oneline import url_profile
from protobench.snapshots.model import Snapshot
from protobench.snapshots.store import SnapshotStore
from protobench.tui.app import MonitorApp
from protobench.tui.charts import throughput_chart
from protobench.tui.live_source import LiveSource
from protobench.tui.source import ReplaySource
from protobench.tui.widgets.line_chart import LineChart
from protobench.vocab.exceptions import ExitCode
from tests.support.pilot import panel_text, wait_for
from tests.support.targets import served

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(300)]

SIZE = (160, 48)
RUNS = {
    "mqtt-fanout": ("mqtt-fanout",),
    "bacnet-ip": ("bacnet-ip",),
    "http-503": ("http-get", "--serve-opt", "status=503"),
}


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Snapshot]:
    """Each run's snapshot (the runs go one after the other: the machine is small)."""
    out = {}
    for name, (profile, *extra) in RUNS.items():
        store = SnapshotStore(tmp_path_factory.mktemp(name))
        command = [sys.executable, "-m", "protobench", "run", profile, *extra]
        command += ["--duration", "2s", "--warmup", "1s", "--processes", "1", "--json", "--quiet"]
        command += ["--snapshots-dir", str(store.directory)]
        done = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert done.returncode in (0, 1), done.stderr.decode()  # 1: a threshold failed
        out[name] = store.load("latest")
    return out


@asynccontextmanager
async def replayed(snapshot: Snapshot) -> AsyncIterator[MonitorApp]:
    """The monitor replaying ``snapshot`` to its end, on the overview."""
    app = MonitorApp(ReplaySource(snapshot, speed=1000.0), refresh=0.0, chart_refresh=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.finished)
        await pilot.press("1")
        await pilot.pause()
        yield app


def legend_of(app: MonitorApp) -> str:
    chart = app.monitor.query_one("#throughput", LineChart)
    return chart.render().plain


async def test_mqtt_subscribers_show_delivery_counters(snapshots: dict[str, Snapshot]) -> None:
    snapshot = snapshots["mqtt-fanout"]
    sustain = snapshot.report.sustain
    assert sustain is not None
    behind = sustain.ops["publish"].counters.get("behind", 0)  # only when the machine lagged
    async with replayed(snapshot) as app:
        counters = panel_text(app, "#counters-now", width=156)
        subscribe = next(line for line in counters.splitlines() if line.startswith("subscribe"))
        for counter in ("received", "expected", "lost 0", "duplicated 0", "out_of_order 0"):
            assert counter in subscribe
        assert "undelivered 0" in subscribe
        assert "in/s " in subscribe
        publish = next(line for line in counters.splitlines() if "publish" in line)
        assert "out/s " in publish
        assert ("behind" in publish) == bool(behind)


async def test_bacnet_ip_names_every_op_in_its_own_colour(snapshots: dict[str, Snapshot]) -> None:
    async with replayed(snapshots["bacnet-ip"]) as app:
        ops = [op.name for op in app.view.ops]
        assert len(ops) == 6
        legend = legend_of(app)
        assert all(f"{name} " in legend for name in ops)
        series = throughput_chart(app.display_now()).series
        assert len({s.style for s in series}) == len(series)
        latency = panel_text(app, "#latency-now", width=156)
        assert all(name in latency for name in ops)  # no name cut to a shared prefix
        assert "notifications" in panel_text(app, "#counters-now", width=156)


async def test_http_503s_are_counted_by_code_with_an_errors_line(
    snapshots: dict[str, Snapshot],
) -> None:
    async with replayed(snapshots["http-503"]) as app:
        errors = panel_text(app, "#errors-now", width=156)
        assert "protocol" in errors
        assert "503×" in errors
        assert "100.00%" in errors
        legend = legend_of(app)
        assert "errors " in legend
        errors_line = next(
            s for s in throughput_chart(app.display_now()).series if s.label == "errors"
        )
        assert max(errors_line.values) > 0


async def test_resources_show_fds_against_the_limit_and_loop_lag(
    snapshots: dict[str, Snapshot],
) -> None:
    async with replayed(snapshots["mqtt-fanout"]) as app:
        resources = panel_text(app, "#resources-now", width=156)
        assert "fds " in resources
        assert "loop lag" in resources


def test_the_runs_are_bounded_on_loopback(snapshots: dict[str, Snapshot]) -> None:
    for snapshot in snapshots.values():
        assert str(snapshot.report.target).split("//")[1].startswith(("127.", "[::1]"))


async def test_ctrl_c_in_a_live_run_shows_the_time_it_really_went(tmp_path: Path) -> None:
    """A real 31 s http-get run, interrupted after its first sustain interval."""
    overrides = Overrides(duration=30.0, warmup=1.0, processes=1, connections=4, rate=200.0)
    plan = resolve(loader.load("http-get"), overrides)
    source = LiveSource(plan, SnapshotStore(tmp_path / "snapshots"))
    app = MonitorApp(source, refresh=0.0, chart_refresh=0.0)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.view.measured_phase == "sustain")
            await pilot.press("ctrl+c")
            await wait_for(pilot, lambda: app.finished)
            await pilot.pause()
            header = panel_text(app, "#header", width=156)
            assert " / 0:31" in header
            shown = re.search(r"(\d+):(\d\d) / 0:31", header)
            assert shown is not None
            assert 1 <= int(shown[1]) * 60 + int(shown[2]) < 20  # not 0:31 / 0:31
            assert "interrupted" in panel_text(app, "#run-summary", width=156)
            await pilot.press("q")
            await pilot.pause()
    finally:
        if source.running:
            source.stop("interrupted")
        source.join(30)
    assert app.return_value == ExitCode.INCOMPLETE  # a partial run, as a headless one exits


async def test_a_live_url_run_with_a_count_ends_on_it_and_shows_it(tmp_path: Path) -> None:
    """``protobench run URL -n 3000 -H ...`` in the monitor, against a served HTTP target."""
    with served("http") as target:
        run = url_profile(f"{target.url}api", {"header": ["X-Test: 1"], "method": "PUT"})
        overrides = Overrides(requests=3000, processes=1, connections=4)
        source = LiveSource(resolve(run.loaded, overrides), SnapshotStore(tmp_path))
        app = MonitorApp(source, refresh=0.0, chart_refresh=0.0)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await wait_for(pilot, lambda: app.finished)
                await pilot.pause()
                header = panel_text(app, "#header", width=156)
                await pilot.press("q")
                await pilot.pause()
        finally:
            source.join(30)
    assert "3,000 / 3,000 requests" in header
    assert app.return_value == 0
    report = SnapshotStore(tmp_path).load("latest").report
    assert report.sustain is not None
    assert report.sustain.ops["put"].ok == 3000


async def test_a_real_run_that_cannot_open_a_session_says_why_and_exits_3(
    tmp_path: Path,
) -> None:
    """Nothing listens on 127.0.0.1:1: the summary names the refusal; q exits 3."""
    overrides = Overrides(
        target="http://127.0.0.1:1/", duration=1.0, warmup=0.0, processes=1, connections=2
    )
    source = LiveSource(resolve(loader.load("http-get"), overrides), SnapshotStore(tmp_path))
    app = MonitorApp(source, refresh=0.0, chart_refresh=0.0)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.finished)
            await pilot.pause()
            summary = " ".join(panel_text(app, "#run-summary", width=156).split())
            assert "no session could open" in summary
            assert "refused" in summary
            assert "Traceback" not in summary
            await pilot.press("q")
            await pilot.pause()
    finally:
        source.join(30)
    assert app.return_value == ExitCode.INCOMPLETE
