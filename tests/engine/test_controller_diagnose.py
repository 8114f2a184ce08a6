"""The plugin's diagnosis reaches the report's verdicts and the summary; a broken one is a line."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from protobench.cli.render import summary_table
from protobench.engine.controller import Controller
from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader
from tests.support.report_frames import frame, plan_of, report_of


def _controller(tmp_path: Path) -> Controller:
    plan = resolve(loader.load("http-get"), Overrides(duration=1.0))
    controller = Controller(plan, tmp_path)
    controller.aggregator.live = {0}
    sustain = {"get": {"ok": 3, "counters": {"lost": 7, "received": 93}}}
    controller.aggregator.add(frame("sustain", 0, 0.0, 1.0, sustain))
    controller.aggregator.add(frame("drain", 0, 0.0, 0.1, {"get": {"counters": {"lost": 1}}}))
    controller.aggregator.finish()
    return controller


def test_the_plugin_diagnoses_each_ops_counters_over_sustain_and_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Mapping[str, Mapping[str, int]]] = []

    def diagnose(ops: Mapping[str, Mapping[str, int]]) -> list[str]:
        seen.append(ops)
        return ["the subscribers fell behind: 8 lost (http://u:pw@127.0.0.1/)"]

    controller = _controller(tmp_path)
    monkeypatch.setattr(controller.plugin, "diagnose", diagnose)
    findings = controller._diagnose()
    assert seen == [{"request": {"ok": 3, "lost": 8, "received": 93}}]  # by the plugin's op
    assert findings == ["the subscribers fell behind: 8 lost (http://u:<secret>@127.0.0.1/)"]


def test_a_diagnosis_that_fails_is_a_finding_not_a_lost_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(ops: Mapping[str, Mapping[str, int]]) -> list[str]:
        raise KeyError("received")

    controller = _controller(tmp_path)
    monkeypatch.setattr(controller.plugin, "diagnose", broken)
    assert controller._diagnose() == ["the http plugin's diagnosis failed: KeyError('received')"]


def test_findings_are_in_the_verdicts_and_the_summary() -> None:
    report = report_of(
        plan_of({"get": 1}),
        [frame("sustain", 0, 0.0, 1.0, {"get": {"ok": 5}})],
        findings=["the broker dropped 12 messages"],
    )
    assert report.verdicts.findings == ["the broker dropped 12 messages"]
    assert "finding: the broker dropped 12 messages" in summary_table(report)
