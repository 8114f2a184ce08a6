"""The controller keeps its notices typed, redacted, and the report carries them as the JSON has."""

from __future__ import annotations

import json
from pathlib import Path

from protobench.engine.controller import Controller
from protobench.engine.plan import Overrides, resolve
from protobench.engine.report import build_report
from protobench.engine.report_model import NoticeEntry, report_to_json
from protobench.engine.resource_log import ResourceLog
from protobench.profiles import loader


def test_a_notice_is_kept_as_a_typed_entry_with_its_details(tmp_path: Path) -> None:
    controller = Controller(resolve(loader.load("http-get"), Overrides(duration=1.0)), tmp_path)
    controller.notice("worker", "worker 1 failed on http://u:pw@127.0.0.1/", worker=1, exit_code=3)
    (entry,) = controller.notices
    assert isinstance(entry, NoticeEntry)
    assert (entry.kind, entry.elapsed, entry.details) == (
        "worker",
        0.0,
        {"worker": 1, "exit_code": 3},
    )
    assert "pw" not in entry.message
    report = build_report(
        plan=controller.plan,
        aggregator=controller.aggregator,
        announcement=None,
        resources=ResourceLog(),
        notices=controller.notices,
        workers=[],
        stop_reason="completed",
        started=0.0,
        target_rss_baseline=None,
        target_rss_peak=None,
    )
    (notice,) = json.loads(report_to_json(report))["notices"]
    assert notice == {
        "kind": "worker",
        "message": entry.message,
        "elapsed": 0.0,
        "worker": 1,
        "exit_code": 3,
    }
