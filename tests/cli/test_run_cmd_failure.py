"""A headless run that fails outright: one line on stderr, exit 3, no traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from protobench.cli import run_cmd
from protobench.engine.controller import Controller
from protobench.engine.plan import Overrides, resolve
from protobench.profiles import loader
from protobench.snapshots.store import SnapshotStore


async def _fails(self: Controller) -> dict[str, Any]:
    del self
    try:
        raise OSError("cannot spawn worker 1 for mqtt://u:hunter2@127.0.0.1:1/")
    except OSError as exc:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [exc]) from None


def test_a_run_that_fails_outright_is_one_line_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(Controller, "run", _fails)
    plan = resolve(loader.load("http-get"), Overrides(duration=1.0))
    with pytest.raises(typer.Exit) as stopped:
        run_cmd.run_plan(plan, SnapshotStore(tmp_path / "snaps"), [])
    assert stopped.value.exit_code == 3
    err = capsys.readouterr().err
    assert err == (
        "protobench: error: the run failed: cannot spawn worker 1 for "
        "mqtt://u:<secret>@127.0.0.1:1/\n"
    )
