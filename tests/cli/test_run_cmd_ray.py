"""``run --ray`` without a cluster: the Ray backend is replaced by a recorder, so these tests
check the command's wiring (the monitor gets the Ray pool factory, the cluster is closed on
every path, a local cluster is announced on stderr) and start no Ray process."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import typer

from protobench.cli import run_cmd
from protobench.engine.distributed import cluster, pool
from protobench.home import ENV
from protobench.snapshots import archive
from protobench.tui import live

ANNOUNCED = "protobench: starting a local Ray cluster of 2 nodes…"


class Tty(io.StringIO):
    """A stdout that says it is a terminal, so ``run`` opens the monitor."""

    def isatty(self) -> bool:
        return True


class FakeBackend:
    """What ``open_backend`` returns: records that it was opened and closed."""

    def __init__(self, steps: list[str], spec: str, embedded: bool) -> None:
        self.steps = steps
        self.spec = spec
        self.embedded = embedded
        steps.append(f"open {spec}")

    def close(self) -> None:
        self.steps.append("close")


class FailingController:
    """A controller whose run fails outright (as a lost cluster would make it)."""

    stop_requested = False

    async def run(self) -> Any:
        raise RuntimeError("the cluster went away")


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The backend's life, in order; ``open_backend`` and the store point at fakes/tmp_path."""
    recorded: list[str] = []
    monkeypatch.setenv(ENV, str(tmp_path))
    monkeypatch.setattr(
        cluster, "open_backend", lambda spec, embedded: FakeBackend(recorded, spec, embedded)
    )
    return recorded


class NoSources:
    """The Typer context ``run`` reads its flags' sources from: every value a default."""

    def get_parameter_source(self, name: str) -> None:
        return None


def _run(ray: str, **options: Any) -> int:
    with pytest.raises(typer.Exit) as done:
        run_cmd.run_command("http-get", ray=ray, run_flags_context=NoSources(), **options)
    return done.value.exit_code


def test_ray_on_a_terminal_opens_the_monitor_with_the_ray_pool_factory(
    monkeypatch: pytest.MonkeyPatch, steps: list[str]
) -> None:
    seen: list[Any] = []

    def fake_run_live(*args: Any, pool_factory: Any = None, **kwargs: Any) -> live.Ended:
        seen.append(pool_factory)
        steps.append("monitor")
        return live.Ended(0, None)

    monkeypatch.setattr(live, "run_live", fake_run_live)
    monkeypatch.setattr("sys.stdout", Tty())
    assert _run("auto") == 0
    assert steps == ["open auto", "monitor", "close"]
    [factory] = seen
    assert isinstance(factory, pool.RayPoolFactory)
    assert isinstance(factory.backend, FakeBackend)
    assert factory.backend.embedded  # http-get serves its embedded target


def test_a_headless_ray_run_that_fails_closes_the_cluster(
    monkeypatch: pytest.MonkeyPatch, steps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    factories: list[Any] = []

    def failing(*args: Any, pool_factory: Any = None, **kwargs: Any) -> FailingController:
        factories.append(pool_factory)
        return FailingController()

    monkeypatch.setattr(archive, "stored_controller", failing)
    assert _run("auto", no_tui=True, quiet=True) == 3
    assert steps == ["open auto", "close"]
    assert isinstance(factories[0], pool.RayPoolFactory)
    assert "the run failed: the cluster went away" in capsys.readouterr().err


def test_a_local_cluster_is_announced_on_stderr_before_it_starts_unless_quiet(
    monkeypatch: pytest.MonkeyPatch, steps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(*args: Any, **kwargs: Any) -> FailingController:
        steps.append("run")
        return FailingController()

    monkeypatch.setattr(archive, "stored_controller", failing)
    assert _run("local:2", no_tui=True) == 3
    err = capsys.readouterr().err
    assert err.splitlines()[0] == ANNOUNCED
    assert steps == ["open local:2", "run", "close"]
    assert _run("local:2", no_tui=True, quiet=True) == 3
    assert "starting a local Ray cluster" not in capsys.readouterr().err
    assert _run("auto", no_tui=True) == 3
    assert "starting a local Ray cluster" not in capsys.readouterr().err


def test_a_bad_ray_spec_is_one_line_and_opens_nothing(
    steps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("local:0") == 2
    assert steps == []
    err = capsys.readouterr().err
    assert err.strip() == "protobench: error: --ray local:0: expected local:N with N from 1 to 16"
